/* delay.h - waiting: the demonstration delay (delay_ms) and the pauses
 * of in-place writes, and the monotonic clock lock waits are timed by. */
#ifndef BOARD_DELAY_H
#define BOARD_DELAY_H

/* Sleep `ms` milliseconds (nothing for ms <= 0), resuming after signals. */
void sleep_ms(long ms);

/* Seconds on CLOCK_MONOTONIC. */
double monotonic_seconds(void);

#endif
