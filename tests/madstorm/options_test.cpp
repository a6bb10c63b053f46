// madstorm's options: the shard from --shard or the launcher's environment
// (Slurm, PMI, Open MPI, in that order), --start-at in its three forms,
// --host-window, --plant-wrong-answer, --transport; bad values are refused
// with the option's name.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "lib/options.hpp"

namespace madstorm {
namespace {

constexpr std::int64_t kNow = 1'796'119'200'000'000'000;  // 2026-12-01T10:00:00Z

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Options parse(std::vector<std::string> args, const Env& env = {}) {
  CLI::App app;
  Options o;
  add_options(app, o);
  args.insert(args.begin(), "madstorm");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  finish_options(o, env.lookup(), kNow);
  return o;
}

TEST(Options, ShardComesFromTheLauncherWhenNotGiven) {
  EXPECT_EQ(parse({}).workload.shard_count, 1u);
  EXPECT_EQ(parse({}).shard_source, "default");
  const Options slurm = parse({}, Env{{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}});
  EXPECT_EQ(slurm.workload.shard_index, 3u);
  EXPECT_EQ(slurm.workload.shard_count, 8u);
  EXPECT_EQ(slurm.shard_source, "SLURM_PROCID/SLURM_NTASKS");
  const Options pmi = parse({}, Env{{{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}});
  EXPECT_EQ(pmi.workload.shard_index, 1u);
  EXPECT_EQ(pmi.shard_source, "PMI_RANK/PMI_SIZE");
  const Options ompi = parse({}, Env{{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}});
  EXPECT_EQ(ompi.workload.shard_count, 4u);
  EXPECT_EQ(ompi.shard_source, "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE");
  // --shard wins over the environment.
  const Options given = parse({"--shard", "2/5"}, Env{{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}}});
  EXPECT_EQ(given.workload.shard_index, 2u);
  EXPECT_EQ(given.workload.shard_count, 5u);
  EXPECT_EQ(given.shard_source, "--shard");
  EXPECT_THROW(parse({}, Env{{{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "8"}}}), std::invalid_argument);
  EXPECT_THROW(parse({}, Env{{{"PMI_RANK", "1"}}}), std::invalid_argument);
  EXPECT_THROW(parse({}, Env{{{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "8"}}}), std::invalid_argument);
  EXPECT_THROW(parse({"--shard", "3/3"}), std::invalid_argument);
  EXPECT_THROW(parse({"--shard", "1"}), std::invalid_argument);
}

TEST(Options, StartAtInEachForm) {
  EXPECT_EQ(parse_start_at("2026-12-01T10:00:00Z", 0), kNow);
  EXPECT_EQ(parse_start_at("2026-12-01T10:00:00", 0), kNow);
  EXPECT_EQ(parse_start_at("2026-12-01 10:00:00", 0), kNow);
  EXPECT_EQ(parse_start_at("2026-12-01T11:30:00+01:30", 0), kNow);
  EXPECT_EQ(parse_start_at("2026-12-01T09:00:00-01:00", 0), kNow);
  EXPECT_EQ(parse_start_at("2026-12-01T10:00:00.25Z", 0), kNow + 250'000'000);
  EXPECT_EQ(parse_start_at("@1796119200", 0), kNow);
  EXPECT_EQ(parse_start_at("@1796119200.000000001", 0), kNow + 1);
  EXPECT_EQ(parse_start_at("+30", kNow), kNow + 30'000'000'000);
  EXPECT_EQ(parse_start_at("+0.5", kNow), kNow + 500'000'000);
  for (const char* bad : {"", "+", "@", "tomorrow", "2026-12-01", "2026-12-01T25:00:00Z", "2026-12-01T10:00:00+1",
                          "2026-12-01T10:00:00.Z", "+-3", "@1.2.3", "2026-12-01T10:00:00ZZ"})
    EXPECT_FALSE(parse_start_at(bad, kNow).has_value()) << bad;
  EXPECT_EQ(parse({"--start-at", "+2"}).start_at_unix_ns, kNow + 2'000'000'000);
  EXPECT_EQ(parse({}).start_at_unix_ns, 0);
  EXPECT_THROW(parse({"--start-at", "soon"}), std::invalid_argument);
}

TEST(Options, HostWindowsPlantAndTransport) {
  const Options o = parse({"--host-window", "5:16", "--host-window", "7:2"});
  ASSERT_EQ(o.storm.window_overrides.size(), 2u);
  EXPECT_EQ(o.storm.window_overrides[0], (std::pair<std::uint32_t, std::uint32_t>{5, 16}));
  EXPECT_EQ(o.storm.window_overrides[1], (std::pair<std::uint32_t, std::uint32_t>{7, 2}));
  for (const char* bad : {"5", "5:0", "x:3", "5:70000", ":3"}) EXPECT_THROW(parse({"--host-window", bad}), std::invalid_argument) << bad;

  const Options p = parse({"--embedded", "ft2:8", "--plant-wrong-answer", "rate:7"});
  EXPECT_EQ(p.plant_fault, PlantedFault::kRate);
  EXPECT_EQ(p.plant_nth, 7u);
  EXPECT_EQ(parse({"--embedded", "ft2:8", "--plant-wrong-answer", "hop-limit"}).plant_fault, PlantedFault::kHopLimit);
  EXPECT_EQ(parse({"--embedded", "ft2:8"}).plant_fault, PlantedFault::kNone);
  EXPECT_THROW(parse({"--embedded", "ft2:8", "--plant-wrong-answer", "qkey"}), std::invalid_argument);
  EXPECT_THROW(parse({"--embedded", "ft2:8", "--plant-wrong-answer", "mtu:0"}), std::invalid_argument);
  EXPECT_THROW(parse({"--plant-wrong-answer", "mtu"}), std::invalid_argument);  // only an embedded SA can be planted

  EXPECT_EQ(parse({}).transport_kind, TransportKind::kUmad);
  const Options v = parse({"--transport", "verbs", "--ca", "mlx5_0", "--port", "2"});
  EXPECT_EQ(v.transport_kind, TransportKind::kVerbs);
  EXPECT_EQ(v.ca, "mlx5_0");
  EXPECT_EQ(v.port, 2);
  EXPECT_THROW(parse({"--transport", "rdma"}), std::invalid_argument);
  EXPECT_THROW(parse({"--pattern", "stampede"}), std::invalid_argument);
}

}  // namespace
}  // namespace madstorm
