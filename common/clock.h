/* The wall clock of the measured times.  Private to the library and launch/. */
#ifndef TPU_COMMON_CLOCK_H
#define TPU_COMMON_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin: only differences mean anything). */
double tpu__now_s(void);

#endif /* TPU_COMMON_CLOCK_H */
