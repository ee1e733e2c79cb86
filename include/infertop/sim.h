#ifndef INFERTOP_SIM_H
#define INFERTOP_SIM_H

/* `infertop sim`: a simulated OpenAI-compatible LLM inference server.
 *
 * It is the ground truth for infertop's tests and the backend of
 * `infertop --demo`: it streams filler tokens at exactly scheduled times
 * (fixed timing) or as a vLLM-like continuous-batching engine would
 * (batching timing), exposes the /metrics of a chosen server profile with
 * values that always match its state, and injects faults on request.
 *
 * Tokenizer (used for usage.prompt_tokens and POST /tokenize alike): the
 * prompt text splits at whitespace; inside each word, every maximal run of
 * ASCII punctuation is one token and every maximal run of other bytes
 * (letters, digits, UTF-8) is one token. "Hello, world!" is 4 tokens,
 * "don't" is 3, "..." is 1. Chat prompts count the text of every message
 * (string content or the "text" of content parts), nothing for roles or
 * templates. A prompt given as token ids counts the ids.
 *
 * Prefix cache: each whole block of --kv-block-tokens prompt tokens is
 * hashed with every token before it; leading blocks found in an LRU of
 * --kv-tokens / block blocks are not prefilled again, and the answer says
 * so in usage.prompt_tokens_details.cached_tokens (the rules: sim_req.h,
 * sim_sched.c and the man page). A prompt + max_tokens past
 * --max-model-len gets vLLM's 400.
 *
 * Streams: response headers go out as soon as a request is taken in (also
 * while it queues), the role-only chat chunk when the engine admits it,
 * then one chunk per token at its scheduled time, the last one carrying
 * finish_reason, then the usage chunk (stream_options.include_usage) and
 * "data: [DONE]". TTFB and TTFT therefore differ by the prefill time.
 *
 * /metrics (and the profile's own path from servers.def: /prometheus/metrics
 * for trtllm, /v1/metrics for nim) exposes that server's names from
 * doc/metrics.md, plus,
 * for every profile, infertop_sim_faults_total{kind} (faults injected) and
 * the histogram infertop_sim_send_lag_seconds (scheduled time of a chunk
 * to its hand-over to the socket: the sim's own timing error). */

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* argv[0] is "sim". Parses options, serves until SIGINT or SIGTERM.
 * Prints exactly one line to stdout, "listening on ADDR:PORT" (the real
 * port when --listen gave port 0), then only stderr, quiet unless
 * --verbose. Returns 0, or 2 for bad options or a failed bind (message on
 * stderr). */
int sim_main(int argc, char **argv);

/* Where the sim serves its simulated DCGM exporter (one GPU whose
 * utilisation and power follow the load): --demo's --gpu-metrics-url. */
#define SIM_DCGM_URL_PATH "/dcgm/metrics"

/* The `infertop sim --help` text. */
void sim_usage(FILE *out);

struct sim_child {
	pid_t pid;
	int port;
};

/* Starts `bin sim --listen 127.0.0.1:0 <extra_args...>` (extra_args is
 * NULL-terminated, may be NULL) as a child process that gets SIGTERM when
 * the calling thread dies, and reads its port from the child's first stdout
 * line. Returns 0; or -1 with a message in errbuf (exec failure, the child
 * exited, or no line within 10 s; the child is then reaped). */
int sim_spawn(const char *bin, const char *const *extra_args, struct sim_child *out, char *errbuf,
	      size_t errcap);

/* SIGTERM, wait up to 5 s, then SIGKILL and wait. Returns the child's exit
 * code (0..255), 128 + signal number if a signal ended it, or -1 if there
 * was no child to wait for. Sets c->pid to 0; harmless when it already is. */
int sim_child_stop(struct sim_child *c);

#endif
