#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim_internal.h"

/* A simulated DCGM exporter (what dcgm-exporter serves on :9400/metrics)
 * for one GPU whose figures follow the simulated load, so that the GPU
 * view and J/token have something to show in --demo. Utilisation is the
 * share of the batch slots in use (running / --max-running); power goes
 * linearly from idle to the board limit with it, as a GPU's roughly does;
 * the energy counter integrates that power between scrapes. The memory in
 * use is the weights plus the KV cache's share of the rest. Every sample
 * carries dcgm-exporter's labels; modelName says the GPU is simulated. */

#define GPU_IDLE_W 70.0
#define GPU_MAX_W 700.0
#define GPU_MEM_MIB 81920.0
#define GPU_WEIGHTS_MIB 16384.0
#define GPU_SM_MHZ 1980.0
#define GPU_LABELS                                                                                            \
	"gpu=\"0\",UUID=\"GPU-00000000-0000-4000-8000-1f3e70501500\",pci_bus_id=\"00000000:00:00.0\","      \
	"device=\"nvidia0\",modelName=\"infertop sim (simulated GPU)\",Hostname=\"infertop-sim\""

struct dbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void db_printf(struct dbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	/* The buffer is sized for the fixed set of lines below. */
	if (n < 0 || (size_t)n >= b->cap - b->n)
		b->oom = 1;
	else
		b->n += (size_t)n;
}

static void field(struct dbuf *b, const char *name, const char *type, const char *help, double v)
{
	db_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{" GPU_LABELS "} %.17g\n", name, help, name, type, name, v);
}

double sim_dcgm_util(const struct sim_server *s)
{
	if (s->opt.max_running <= 0)
		return 0;
	double u = (double)s->nrunning / (double)s->opt.max_running;
	return u > 1 ? 1 : u;
}

double sim_dcgm_power(double util)
{
	return GPU_IDLE_W + (GPU_MAX_W - GPU_IDLE_W) * util;
}

char *sim_dcgm_render(struct sim_server *s, int64_t now_ns, size_t *len)
{
	double util = sim_dcgm_util(s), watts = sim_dcgm_power(util);
	/* The power since the last scrape is taken as the one now: a left sum
	 * over the scrapes, the nearest a pull-only exporter can get. */
	if (s->dcgm_t_ns > 0 && now_ns > s->dcgm_t_ns)
		s->dcgm_energy_mj += s->dcgm_w * (double)(now_ns - s->dcgm_t_ns) / 1e6;
	s->dcgm_t_ns = now_ns;
	s->dcgm_w = watts;
	double kv = s->opt.kv_tokens > 0 ? (double)s->kv_used / (double)s->opt.kv_tokens : 0;
	double used = GPU_WEIGHTS_MIB + (GPU_MEM_MIB - GPU_WEIGHTS_MIB) * (kv > 1 ? 1 : kv);
	struct dbuf b = {malloc(8192), 0, 8192, 0};
	if (!b.p)
		return NULL;
	field(&b, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", round(util * 100));
	field(&b, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", round(used));
	field(&b, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", round(GPU_MEM_MIB - used));
	field(&b, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", watts);
	field(&b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
	      "Total energy consumption since boot (in mJ).", floor(s->dcgm_energy_mj));
	field(&b, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", round(35 + 40 * util));
	field(&b, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", GPU_SM_MHZ);
	field(&b, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", util);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.n;
	return b.p;
}
