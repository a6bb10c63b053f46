// OpenSM's and infiniband-diags' node name map (the file --node-name-map
// and ibnetdiscover read): one `GUID "name"` line per node, `#` comments
// and blank lines ignored. Names replace NodeDescription wherever the
// performance manager, the metrics and madengine-ctl name a node.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace madengine::perfmgr {

class NodeNameMap {
 public:
  // The mapped name of `node_guid`, or `description` when the map has none.
  std::string_view name(std::uint64_t node_guid, std::string_view description) const noexcept {
    const auto it = names_.find(node_guid);
    return it == names_.end() ? description : std::string_view(it->second);
  }
  std::size_t size() const noexcept { return names_.size(); }
  void add(std::uint64_t node_guid, std::string name) { names_[node_guid] = std::move(name); }

 private:
  std::unordered_map<std::uint64_t, std::string> names_;
};

// Parses the map's text; false with `error` as "name:line: what" on a line
// that is not a GUID (strtoull base 0, as the diags read it) followed by a
// name (in double quotes, or the rest of the line up to a comment).
bool parse_node_name_map(std::string_view text, const std::string& name, NodeNameMap& out, std::string& error);
// Reads and parses a file; false with `error` naming the file (and line).
bool load_node_name_map(const std::string& path, NodeNameMap& out, std::string& error);

}  // namespace madengine::perfmgr
