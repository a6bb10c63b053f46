/* libmad_count.so: counts the MADs a program hands to umad_send, by class,
 * method and attribute, and writes the counts when the program exits.
 * Preloaded before ibsim's libumad2sim.so, it lets the same figures be taken
 * from any libibumad program (OpenSM as well as madengine), so two SMs can be
 * compared SMP by SMP. The counts go to $MAD_COUNT_OUT (appended), else to
 * stderr; one line a (class, method, attribute) that was sent:
 *   mad_count CLASS METHOD ATTR COUNT
 * C, no project libraries: it must load into OpenSM. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_EXPORT __attribute__((visibility("default")))

/* SMPs only (LID-routed 0x01 and directed-route 0x81): 2 classes x 128
 * request methods x 64 K attributes would be 64 MB; the SM attributes all
 * sit below 0x0100 and the rest are folded into one bucket. */
enum { kAttrs = 0x100, kMethods = 0x80, kClasses = 2 };
static unsigned long counts[kClasses][kMethods][kAttrs + 1];
static unsigned long other_mads;

typedef int (*umad_send_fn)(int, int, void *, int, int, int);
typedef int (*umad_size_fn)(void);
static umad_send_fn real_send;
static umad_size_fn real_size;

static void resolve(void) {
  /* memcpy: ISO C has no cast from an object pointer to a function pointer. */
  if (real_send == NULL) {
    void *sym = dlsym(RTLD_NEXT, "umad_send");
    memcpy(&real_send, &sym, sizeof sym);
  }
  if (real_size == NULL) {
    void *sym = dlsym(RTLD_NEXT, "umad_size");
    memcpy(&real_size, &sym, sizeof sym);
  }
}

COUNT_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries) {
  resolve();
  if (umad != NULL && real_size != NULL && length >= 24) {
    const uint8_t *mad = (const uint8_t *)umad + real_size();
    const uint8_t mclass = mad[1], method = mad[3];
    const unsigned attr = ((unsigned)mad[16] << 8) | mad[17];
    const int c = mclass == 0x01 ? 0 : mclass == 0x81 ? 1 : -1;
    if (c < 0 || method >= kMethods) {
      __atomic_fetch_add(&other_mads, 1, __ATOMIC_RELAXED);
    } else {
      __atomic_fetch_add(&counts[c][method][attr < kAttrs ? attr : kAttrs], 1, __ATOMIC_RELAXED);
    }
  }
  return real_send != NULL ? real_send(portid, agentid, umad, length, timeout_ms, retries) : -1;
}

__attribute__((destructor)) static void dump_counts(void) {
  const char *path = getenv("MAD_COUNT_OUT");
  FILE *out = path != NULL ? fopen(path, "a") : NULL;
  if (out == NULL) out = stderr;
  for (int c = 0; c < kClasses; ++c)
    for (int m = 0; m < kMethods; ++m)
      for (int a = 0; a <= kAttrs; ++a)
        if (counts[c][m][a] != 0)
          fprintf(out, "mad_count 0x%02x 0x%02x 0x%04x %lu\n", c == 0 ? 0x01 : 0x81, m, a, counts[c][m][a]);
  if (other_mads != 0) fprintf(out, "mad_count other - - %lu\n", other_mads);
  if (out != stderr) fclose(out);
}
