// The SM's M_Keys (see sm.hpp): the book loaded from guid2mkey at start,
// merged with what each discovery learned, saved when it changed.
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "sm/sm.hpp"

namespace madengine::sm {

void SubnetManager::load_mkeys() {
  mkeys_.configured = cfg_.m_key;
  if (cfg_.guid2mkey_path.empty()) return;
  FileIssue err;
  if (!load_guid2mkey(cfg_.guid2mkey_path, mkeys_.keys, err)) throw std::invalid_argument("guid2mkey " + err.text());
  mkeys_saved_ = mkeys_.keys;
  if (!mkeys_.keys.empty())
    spdlog::info("sm: {}: M_Keys of {} ports", cfg_.guid2mkey_path, mkeys_.keys.size());
}

void SubnetManager::learn_mkeys(const DiscoveryResult& d) {
  for (const auto& [guid, key] : d.port_mkeys) mkeys_.keys[guid] = key;
  // Hidden from the key we used: the configured one is tried next (another
  // SM of this subnet gave it), then the port's lease decides.
  for (const std::uint64_t guid : d.port_mkeys_wrong) mkeys_.keys.erase(guid);
  // Where each end port was found: the next sweep reaches it by path before it knows its GUID.
  mkeys_.guid_at_path.clear();
  for (fabric::NodeId i = 0; i < d.fabric.nodes.size(); ++i) {
    const fabric::Node& n = d.fabric.nodes[i];
    if (n.is_switch()) {
      if (!n.ports.empty()) mkeys_.guid_at_path[MKeyBook::path_key(n.dr_path)] = n.ports[0].guid;
      continue;
    }
    for (std::uint8_t p = 1; p < n.ports.size() && i < d.ca_port_paths.size() && p < d.ca_port_paths[i].size(); ++p)
      if (n.ports[p].guid != 0) mkeys_.guid_at_path[MKeyBook::path_key(d.ca_port_paths[i][p])] = n.ports[p].guid;
  }
}

// As guid2lid: written by the I/O pool from a copy, in order.
void SubnetManager::save_mkeys_async() {
  if (cfg_.guid2mkey_path.empty() || mkeys_.keys == mkeys_saved_) return;
  mkeys_saved_ = mkeys_.keys;
  const bool queued = io_->submit([path = cfg_.guid2mkey_path, keys = mkeys_.keys] {
    std::string err;
    if (!save_guid2mkey(path, keys, err)) spdlog::warn("sm: cannot save guid2mkey {}: {}", path, err);
  });
  if (!queued) {
    spdlog::warn("sm: guid2mkey not saved: the I/O queue is full (saved with the next change)");
    mkeys_saved_.clear();
  }
}

}  // namespace madengine::sm
