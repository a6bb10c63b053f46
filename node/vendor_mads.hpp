// Requests of vendor-specific classes (0x09, 0x30-0x4F) answered by the
// embedder's handlers on the engine core that received them: one dispatcher
// entry per class, spread over the cores (no hand-off while a core keeps up).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.hpp"
#include "madengine/node/node.hpp"

namespace madengine::node {

class VendorMads {
 public:
  // Registers a handler per class on `engine`, which must not be running.
  VendorMads(Engine& engine, std::vector<VendorClassHandler> handlers);
  ~VendorMads();
  VendorMads(const VendorMads&) = delete;
  VendorMads& operator=(const VendorMads&) = delete;

 private:
  class ClassHandler;
  std::vector<std::unique_ptr<ClassHandler>> handlers_;
};

}  // namespace madengine::node
