// HA journal of the SA's mutable state (service records, multicast groups
// with MLIDs and members, InformInfo subscriptions): one image, encoded in a
// versioned, checksummed binary file written atomically beside guid2lid, so
// a restarted or promoted SM serves the same records (warm restart).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "sa/state/fabric_identity.hpp"
#include "sa/state/mutable_state.hpp"

namespace madengine::sa {

struct SaStateImage {
  std::vector<ServiceEntry> services;
  std::vector<McGroupEntry> groups;
  std::vector<Subscription> subscriptions;
};

// Bounds a decoder trusts (a corrupt count cannot make it allocate more).
inline constexpr std::uint32_t kJournalServicesMax = 1u << 20;
inline constexpr std::uint32_t kJournalGroupsMax = 1u << 16;
inline constexpr std::uint32_t kJournalMembersMax = 1u << 20;  // per group
inline constexpr std::uint32_t kJournalSubscriptionsMax = 1u << 20;

// The stores' published views, copied.
SaStateImage capture(const ServiceStore& services, const McastStore& groups, const InformStore& subs);
// Replaces the stores' contents; returns the multicast groups dropped as
// invalid (see McastStore::restore).
std::size_t apply(SaStateImage image, ServiceStore& services, McastStore& groups, InformStore& subs);

// Leases are written as time left at `now_ns` and read back relative to the
// reader's `now_ns`: engine clocks do not survive a restart. The journal
// names the fabric it describes (`fabric`, stored in its header).
std::vector<std::uint8_t> encode_journal(const SaStateImage& image, Nanos now_ns, const FabricIdentity& fabric = {});
// False with `error` set on a bad magic, version, count, length or checksum.
// `fabric` (if given) receives the journal's fabric; a version 1 journal
// (before journals named it) reads as unknown.
bool decode_journal(std::span<const std::uint8_t> bytes, Nanos now_ns, SaStateImage& out, std::string& error,
                    FabricIdentity* fabric = nullptr);

// Writes `path` atomically (temporary file in the same folder, fsync,
// rename), so a crash leaves the old or the new journal, never a torn one.
bool write_journal_file(const std::string& path, const SaStateImage& image, Nanos now_ns, std::string& error,
                        const FabricIdentity& fabric = {});
// A missing file is not an error: `found` false and an empty image.
bool read_journal_file(const std::string& path, Nanos now_ns, SaStateImage& out, bool& found, std::string& error,
                       FabricIdentity* fabric = nullptr);

}  // namespace madengine::sa
