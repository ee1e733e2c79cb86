#ifndef INFERTOP_SERVE_H
#define INFERTOP_SERVE_H

/*
 * infertop serve: the load generator as a long-lived service. One control
 * API (control.h) on one libev loop that outlives the runs; runs come in
 * as JSON specs (runspec.h), one at a time:
 *
 *   POST   /v1/runs             a run spec (or POST /start-load, the helm
 *                               chart's payload) -> 201 {"id":...}; 409
 *                               while a run goes on; 400 naming the field
 *   GET    /v1/runs             every run of this process: id and state
 *   GET    /v1/runs/ID          state and the live summary (the run's
 *                               snapshot while it runs, its result after)
 *   GET    /v1/runs/ID/result   the result file's bytes; 409 until done
 *   DELETE /v1/runs/ID          graceful stop (as Ctrl-C), 202
 *
 * While a run goes on, /v1/status, /v1/load, /metrics, pause, resume,
 * snapshot and stop act on it; between runs they answer 409 "no run".
 * Results go to --results-dir as infertop-run-ID.json, atomically.
 *
 * Fleets: every run takes serve's --slice I/N (the spec's "slice" beats
 * it); without one, a pod of a Kubernetes Indexed Job takes slice
 * JOB_COMPLETION_INDEX / $INFERTOP_SLICE_COUNT. Without --seed, a slice
 * runs with a seed of its own (dataset.h).
 */

/* The pod template sets it to the Job's completions. */
#define SERVE_SLICE_COUNT_ENV "INFERTOP_SLICE_COUNT"

/* `infertop serve [OPTIONS]`: argv[0] is "serve". Returns the exit code. */
int serve_main(int argc, char **argv);

#endif
