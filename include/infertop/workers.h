#ifndef INFERTOP_WORKERS_H
#define INFERTOP_WORKERS_H

/*
 * --workers N: every core. N `infertop serve` processes on this machine
 * (each its own loop and curl multi), driven as a local fleet: the run's
 * options go to all of them through `infertop fleet --start` (the totals
 * split, a seed and a dataset slice each, one start time), the dashboard
 * or the headless lines show their exact merge, the keys act on all, and
 * -o is the exact merge of their results. No second mechanism: the
 * fleet's (fleet.h).
 */

struct config;

/* Runs the workers for the options in argv (parsed into cfg, with
 * cfg->url already the --demo simulator's when there is one). The exit
 * status. */
int workers_main(const struct config *cfg, int argc, char **argv);

#endif
