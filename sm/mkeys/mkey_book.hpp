// The M_Keys the SM knows ports to hold (IBA 14.2.4), by port GUID: a CA
// port's own, or a switch's port 0, whose key guards the whole switch. The
// SM uses the key a port holds to reach it, installs its own configured
// key, and keeps what it knows across restarts in OpenSM's guid2mkey format
// ("0x<GUID> 0x<M_Key>", a blank line after each), so a restarted SM whose
// key changed can still reach and re-key its ports. Saves are durable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "madengine/wire/smp.hpp"
#include "sm/file_issue.hpp"

namespace madengine::sm {

using Guid2Mkey = std::map<std::uint64_t, std::uint64_t>;  // ordered: deterministic files

inline constexpr std::size_t kMKeyCandidatesMax = 4;  // keys tried on a port that does not answer

struct MKeyBook {
  std::uint64_t configured = 0;  // the SM's own key (sm.m_key)
  Guid2Mkey keys;                // what ports hold, as last learned or written
  // The port GUID last found at each directed-route path: a port the sweep
  // has not reached yet is addressed by its path.
  std::unordered_map<std::string, std::uint64_t> guid_at_path;

  // A port that holds no key (0) checks none: it takes ours as well, and a
  // port we took for keyless may since hold it (another SM of ours keyed
  // it). Sending 0 to a protected port is a wrong key, and each wrong key
  // starts the port's lease (IBA 14.2.4.2): protection would lapse.
  std::uint64_t key_for(std::uint64_t port_guid) const noexcept {
    const auto it = keys.find(port_guid);
    return it != keys.end() && it->second != 0 ? it->second : configured;
  }
  // Keys to try in order: `first`, the configured key, then the others the
  // book holds (old keys of a restarted or re-keyed subnet), bounded.
  std::vector<std::uint64_t> candidates(std::uint64_t first) const;
  static std::string path_key(const wire::DrPath& p);
};

// A missing file is an empty map (a first start).
bool load_guid2mkey(const std::string& path, Guid2Mkey& out, FileIssue& err);
bool save_guid2mkey(const std::string& path, const Guid2Mkey& keys, std::string& err);
std::string format_guid2mkey(const Guid2Mkey& keys);

}  // namespace madengine::sm
