/* The wall clock of the library (internal): one definition for every layer. */
#ifndef TPU_CLOCK_H
#define TPU_CLOCK_H

/* Seconds on the monotonic clock, from an arbitrary origin. */
double tpu__now_s(void);

#endif /* TPU_CLOCK_H */
