// The C++ API from an installed libmadengine: a node on a simulated fat
// tree, up, a path between two hosts, read through the FabricView, stopped.
// Exits 0 when all of it worked.
#include <madengine/node/node.hpp>

#include <chrono>
#include <cstdio>
#include <exception>

int main() {
  using namespace madengine;
  try {
    node::NodeConfig cfg = node::parse_config(
        "[transport]\nkind = \"sim\"\ngenerate = \"ft2:4\"\nsim_speed = 0.0\n[engine]\ncores = 1\npin = false\n"
        "[log]\nlevel = \"warn\"\n",
        "consumer.toml");
    node::apply_log_config(cfg.log);
    unsigned ups = 0;
    node::NodeHooks hooks;
    hooks.events.subnet_up = [&ups](std::uint64_t) { ++ups; };
    node::Node n(cfg, std::move(hooks));
    n.start();
    if (!n.wait_subnet_up(std::chrono::seconds(30))) {
      std::fprintf(stderr, "consumer: no subnet up\n");
      return 1;
    }
    const node::FabricView v = n.fabric_view();
    std::uint16_t first = 0, last = 0;
    for (const node::EndPort e : v.end_ports()) {
      if (v.node(e.node).is_switch()) continue;
      if (first == 0) first = v.lid_of(e);
      last = v.lid_of(e);
    }
    node::PathInfo p;
    const node::PathResult r = n.path(first, last, p);
    n.stop();
    std::printf("consumer: epoch %llu, %zu nodes, %zu links, path %u -> %u: %s, %u hops; %u subnet-up events\n",
                static_cast<unsigned long long>(v.epoch()), v.node_count(), v.link_count(), first, last,
                r == node::PathResult::kOk ? "ok" : "none", p.hops, ups);
    return r == node::PathResult::kOk && p.hops == 2 && ups == 1 ? 0 : 1;
  } catch (const node::ConfigError& e) {
    std::fprintf(stderr, "consumer: config: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
  }
  return 1;
}
