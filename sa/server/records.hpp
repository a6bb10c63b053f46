// The read-only SA records (IBA 15.2.5) built from a published Snapshot:
// every record of an attribute that matches a query's component mask is
// appended to a RecordSink at the GetTable stride. PathRecord and the
// mutable-state records have their own files (path_query, sa/state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "madengine/wire/sa.hpp"
#include "sa/server/components.hpp"
#include "sa/snapshot.hpp"

namespace madengine::sa {

// Where matching records go: `bytes` grows by one stride per record; stops
// accepting (full()) after `limit` records (Get asks for 2 to tell one from many).
// `bit_masks`: the components matched as bit masks (bit_mask_components).
class RecordSink {
 public:
  RecordSink(std::vector<std::uint8_t>& bytes, const RecordLayout& layout, std::uint64_t mask,
             const std::uint8_t* query, std::size_t limit, std::uint64_t bit_masks = 0) noexcept
      : bytes_(bytes), layout_(layout), mask_(mask), bit_masks_(bit_masks), query_(query), limit_(limit),
        stride_(wire::attr_offset_for(layout.size) * 8u) {
    bytes_.clear();
  }
  // Appends `rec` (layout.size bytes) if it matches the query's components
  // other than `unmatched`; false once full.
  bool offer(const void* rec, std::uint64_t unmatched = 0);
  bool full() const noexcept { return count_ >= limit_; }
  std::size_t count() const noexcept { return count_; }
  std::uint16_t stride() const noexcept { return stride_; }
  std::uint64_t mask() const noexcept { return mask_; }
  const std::uint8_t* query() const noexcept { return query_; }
  const std::vector<std::uint8_t>& bytes() const noexcept { return bytes_; }
  // The record the last successful offer() appended (count() > 0), to redact.
  std::uint8_t* last() noexcept { return bytes_.data() + (count_ - 1) * stride_; }

 private:
  std::vector<std::uint8_t>& bytes_;
  const RecordLayout& layout_;
  std::uint64_t mask_;
  std::uint64_t bit_masks_;
  const std::uint8_t* query_;
  std::size_t limit_;
  std::uint16_t stride_;
  std::size_t count_ = 0;
};

// Fills `sink` with the attribute's records from the snapshot. Returns false
// for attributes this function does not serve.
bool collect_snapshot_records(const Snapshot& snap, std::uint16_t attr_id, RecordSink& sink);

// The LID a record query is pinned to (component 0 of the LID-keyed records), or 0.
std::uint16_t query_lid(std::uint16_t attr_id, std::uint64_t mask, const std::uint8_t* query) noexcept;

}  // namespace madengine::sa
