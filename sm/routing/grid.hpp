// The coordinates of the switches of a torus or mesh, for dimension-order
// routing: given by GUID (GridSpec) or inferred from the wiring, then
// checked link by link. Inference walks straight lines: c continues a -> b
// straight when a and c share no neighbour but b (a turn always closes a
// square), and fills the rest of the grid by completing squares. That needs
// rings of at least 5 switches in a torus (rings of 3 and 4 have extra short
// cycles); meshes of any size work. Otherwise give the coordinates.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sm/routing/routing.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

struct Grid {
  std::array<std::uint16_t, 3> dims{1, 1, 1};
  std::array<bool, 3> wrap{};
  std::vector<std::array<std::uint16_t, 3>> coord;  // by SwIdx
};

// False, with the reason in `error`, when the switches are not a complete
// torus or mesh (a missing or extra link, a switch off the grid).
bool make_grid(const SwitchGraph& g, const GridSpec& spec, Grid& out, std::string& error);

}  // namespace madengine::sm
