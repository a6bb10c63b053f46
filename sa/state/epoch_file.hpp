// The last published epoch kept on disk (warm restart, docs/ha.md): the
// master writes each epoch it publishes (fabric, LFTs, path database, port
// tables, partitions, QoS policy, MFTs) beside guid2lid and the SA journal,
// and a restarted daemon publishes it before its first sweep, so the SA
// answers within milliseconds of the start instead of after discovery,
// routing and the path database. Versioned and checksummed; it names the
// fabric it describes, as the journal does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sa/snapshot.hpp"
#include "sa/state/fabric_identity.hpp"

namespace madengine::sa {

// Bounds a decoder trusts (a corrupt count cannot make it allocate more).
inline constexpr std::uint32_t kEpochNodesMax = 1u << 20;
inline constexpr std::uint64_t kEpochBytesMax = std::uint64_t{1} << 32;

// The snapshot with its MFT view as it is now; `fabric` goes in the header.
std::vector<std::uint8_t> encode_epoch(const Snapshot& snap, const FabricIdentity& fabric);
// False with `error` set on a bad magic, version, byte order, length,
// checksum, count or reference (a node, switch or exception out of range).
// `out` must be a fresh snapshot: on success it is indexed
// (Snapshot::index) and ready to publish, and `fabric` holds the header's;
// on failure drop it.
bool decode_epoch(std::span<const std::uint8_t> bytes, Snapshot& out, FabricIdentity& fabric, std::string& error);

// Writes `path` atomically (temporary, fsync, rename), as the journal.
bool write_epoch_file(const std::string& path, const Snapshot& snap, const FabricIdentity& fabric, std::string& error);
// A missing file is not an error: `found` false.
bool read_epoch_file(const std::string& path, Snapshot& out, FabricIdentity& fabric, bool& found, std::string& error);

}  // namespace madengine::sa
