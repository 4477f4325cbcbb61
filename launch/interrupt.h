/*
 * SIGINT and SIGTERM: one line naming the signal and the row or step that was
 * running, the temporary output files removed (no partial file; the old files
 * stay), then the signal's own end (exit status 128 + the signal).  Private to
 * launch/.
 */
#ifndef APP_LAUNCH_INTERRUPT_H
#define APP_LAUNCH_INTERRUPT_H

/*
 * Put the handler in front of whatever handles the two signals now (the
 * default, or the job's monitor hook, which still runs after it).  Cheap:
 * called at the start and again whenever an output file is opened.
 */
void app_interrupt_install(void);
/* 'done' of 'total' items finished, 'item' running (may be NULL): for the line. */
void app_interrupt_at(long done, long total, const char *item);

#endif /* APP_LAUNCH_INTERRUPT_H */
