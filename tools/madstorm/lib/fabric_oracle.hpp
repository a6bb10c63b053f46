// The fabric-truth oracle for --embedded runs: checks a PathRecord against a
// walk of the LFTs the SM programmed into the simulated fabric (sim::Fabric),
// never against the SA's own database: the DLID is reached from the source
// port and is the port the DGID names, MTU and rate are the walk's smallest,
// the P_Key is a partition both ports share, the SL has a data VL on every
// link, HopLimit keeps packets in the subnet, and a Reversible path walks back.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "lib/path_oracle.hpp"
#include "sim/fabric.hpp"

namespace madstorm {

struct FabricOracleConfig {
  std::uint64_t subnet_prefix = madengine::wire::kDefaultSubnetPrefix;
  // The SA under test reports no QoS layers, so every path must use SL 0;
  // false accepts any SL the walk has a data VL for.
  bool expect_sl0 = true;
};

// Walks are cached per (source switch, destination LID), so 419,256 checks
// cost a few walks per switch pair: the cache assumes the LFTs and link
// states do not change while it is used (call clear() after a re-route).
// Rows (one per switch, LIDs wide, 8 bytes an entry) are allocated when a
// switch first starts a walk; each port's first hop is kept too.
class FabricOracle final : public PathOracle {
 public:
  FabricOracle(const madengine::sim::Fabric& fabric, FabricOracleConfig cfg = {});
  PathCheck check(const madengine::wire::PathRecord& rec) noexcept override;
  void clear() noexcept;

  // What a walk from an end port's egress to a LID found (exposed for tests).
  struct Walk {
    bool reached = false;
    std::uint8_t hops = 0;
    std::uint8_t mtu = 0;        // MTU code
    std::uint16_t rate_x10 = 0;  // Gb/s x 10
    bool sl_usable = false;      // `sl` has a data VL on every egress
  };
  Walk walk(madengine::sim::PortIdx from, std::uint16_t dlid, std::uint8_t sl = 0) noexcept;
  madengine::sim::PortIdx port_of_lid(std::uint16_t lid) const noexcept {
    return lid < owner_.size() ? owner_[lid] : madengine::sim::kNoPortIdx;
  }
  std::size_t walks() const noexcept { return walks_; }  // cache fills so far

 private:
  // One (switch, LID) walk from the switch's egress on: state 0 = not walked.
  struct Entry {
    std::uint8_t state = 0;   // 0 unknown, 1 reached, 2 not reached
    std::uint8_t hops = 0;    // links from the switch
    std::uint8_t mtu = 0;
    std::uint8_t out_port = 0;  // the switch's egress port number (0: the LID is the switch's own)
    std::uint16_t rate_x10 = 0;
    std::uint16_t sl_ok = 0;    // SLs usable on the egresses after this switch's
  };
  static_assert(sizeof(Entry) == 8);
  // The first hop of every walk from an end port: where it enters the
  // switches and what the port's own link allows.
  struct Start {
    std::uint8_t state = 0;   // 0 unknown, 1 at switch `sw`, 2 blocked, 3 cabled to another CA's port `sw`
    std::uint8_t mtu = 0;
    std::uint8_t in = 0;      // the port number it enters `sw` by (0: the switch's own port 0)
    std::uint8_t hops = 0;    // links crossed to get there
    std::uint16_t rate_x10 = 0;
    std::uint16_t sl_ok = 0;  // SLs with a data VL on the port's egress
    std::uint32_t sw = 0;
  };
  const Start& start_of(madengine::sim::PortIdx from) noexcept;
  const Entry& entry(std::uint32_t sw, std::uint16_t dlid) noexcept;
  Entry walk_from_switch(std::uint32_t sw, std::uint16_t dlid) noexcept;
  std::uint16_t sls_usable(madengine::sim::PortIdx out, std::uint8_t in_port_num) const noexcept;
  bool sl_usable(madengine::sim::PortIdx out, std::uint8_t in_port_num, std::uint8_t sl) const noexcept;
  std::uint16_t link_rate_x10(madengine::sim::PortIdx p) const noexcept;

  const madengine::sim::Fabric& fabric_;
  FabricOracleConfig cfg_;
  std::vector<madengine::sim::PortIdx> owner_;  // LID -> the port whose LID range holds it
  std::size_t row_width_ = 0;                   // the highest LID owned + 1
  std::vector<std::uint32_t> row_of_;           // node -> row in rows_ (kNoRow until it starts a walk)
  std::vector<std::vector<Entry>> rows_;
  std::vector<Start> starts_;  // by PortIdx
  std::size_t walks_ = 0;
};

// Gb/s x 10 of a PathRecord rate code (IBA 15.2.5.16), 0 for a code with none.
std::uint16_t rate_code_x10(std::uint8_t code) noexcept;

}  // namespace madstorm
