// The SM's partitions (see sm.hpp): the configuration an operator reloads,
// and the plan each heavy sweep applies to the fabric it found.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "sm/sm.hpp"

namespace madengine::sm {

void SubnetManager::set_partitions(std::shared_ptr<const PartitionConfig> cfg) {
  {
    std::lock_guard lock(partitions_mu_);
    partitions_next_ = std::move(cfg);
  }
  partitions_changed_.store(true, std::memory_order_release);  // pairs with the acquire in plan_partitions_for
  request_heavy_sweep();
}

const PartitionPlan& SubnetManager::plan_partitions_for(const fabric::Fabric& f, std::uint64_t sm_port_guid) {
  bool fresh_config = false;
  if (partitions_changed_.exchange(false, std::memory_order_acquire)) {
    std::lock_guard lock(partitions_mu_);
    partitions_ = partitions_next_;
    fresh_config = true;
  } else if (plan_ == nullptr) {
    partitions_ = cfg_.partitions;
    fresh_config = true;
  }
  auto plan = std::make_shared<PartitionPlan>(plan_partitions(
      f, partitions_.get(),
      PartitionOptions{.sm_port_guid = sm_port_guid, .allow_both_pkeys = cfg_.allow_both_pkeys,
                       .qos = cfg_.qos != nullptr, .packet_life = cfg_.subnet_timeout}));
  // A port named but absent is worth a line once per configuration, not per sweep.
  if (fresh_config) {
    for (const FileIssue& n : plan->notes) spdlog::warn("partitions: {}", n.text());
    spdlog::info("partitions: {} partitions, {} groups ({})", plan->partitions.size(), plan->groups.size(),
                 partitions_ != nullptr ? partitions_->file : std::string("no partitions file: default partition"));
  }
  const bool groups_changed =
      !groups_sent_once_ || !std::equal(groups_sent_.begin(), groups_sent_.end(), plan->groups.begin(), plan->groups.end(),
                                        [](const wire::McMemberRecord& a, const wire::McMemberRecord& b) {
                                          return std::memcmp(&a, &b, sizeof a) == 0;
                                        });
  if (groups_changed && cfg_.on_partition_groups) {
    groups_sent_ = plan->groups;
    groups_sent_once_ = true;
    try {
      cfg_.on_partition_groups(plan->groups);
    } catch (...) {
      spdlog::warn("partitions: groups not handed to the SA (out of memory); tried again next sweep");
      groups_sent_once_ = false;
    }
  }
  plan_ = std::move(plan);
  return *plan_;
}

}  // namespace madengine::sm
