// TSan suppressions for the engine's test binaries, by path, so our own code
// and the SPSC rings stay checked: Boost.Lockfree's queue reads a node's link
// while another thread may recycle the node (its tagged indices make the
// stale read harmless); DPDK's HTS (MPMC) ring, used by the pool's shared
// free ring, mixes an 8-byte CAS with a 4-byte tail store, which TSan cannot
// pair (see ring.hpp). Include it in exactly one file of a test binary.
#pragma once

// Default visibility: the runtime finds it by name, and the build hides
// symbols by default (-fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const char* __tsan_default_suppressions() {
  return "race:boost/lockfree/\n"
         "race:__rte_ring_do_hts_enqueue_elem\n"
         "race:__rte_ring_do_hts_dequeue_elem\n";
}
