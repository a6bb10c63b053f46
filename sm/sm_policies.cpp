// The SM's policies (see sm.hpp): the partitions and the qos-policy an
// operator reloads, the partition plan each heavy sweep applies to the
// fabric it found, and the QoS settings each publication gives the SA.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "sm/qos/policy_view.hpp"
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

void SubnetManager::set_qos_policy(std::shared_ptr<const QosPolicy> policy) {
  {
    std::lock_guard lock(partitions_mu_);
    qos_policy_next_ = std::move(policy);
  }
  qos_policy_changed_.store(true, std::memory_order_release);  // pairs with the acquire in fill_qos
  request_heavy_sweep();
}

void SubnetManager::fill_qos(const fabric::Fabric& f, sa::Snapshot& snap) {
  snap.qos = cfg_.qos != nullptr;
  snap.valid_sl_mask = cfg_.qos != nullptr ? cfg_.qos->valid_sl_mask() : 0xffff;
  snap.qos_policy.reset();
  if (cfg_.qos == nullptr) return;
  bool changed = false;
  if (qos_policy_changed_.exchange(false, std::memory_order_acquire)) {
    std::lock_guard lock(partitions_mu_);
    qos_policy_ = qos_policy_next_;
    changed = true;
  } else if (!qos_policy_taken_) {
    qos_policy_ = cfg_.qos_policy;  // the configured one, until a reload
    changed = true;
  }
  qos_policy_taken_ = true;
  if (qos_policy_ == nullptr || plan_ == nullptr) return;
  // Groups name ports and partitions: resolved again for every publication's fabric.
  qos_view_ = resolve_qos_policy(*qos_policy_, f, *plan_, transport_.local_port().port_guid);
  if (changed)
    spdlog::info("qos: policy {}: {} port groups, {} levels, {} match rules", qos_policy_->file,
                 qos_policy_->groups.size(), qos_policy_->levels.size(), qos_policy_->rules.size());
  snap.qos_policy = qos_view_;
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
                       .qos = cfg_.qos != nullptr, .packet_life = cfg_.ports.subnet_timeout}));
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
