// RMPP sender and receiver over an in-memory link with ManualClock time:
// wire facts (flags, segment numbers, PayloadLength), round trips of 1 to
// 1000 segments with seeded loss of DATA and ACKs, reordering and
// duplicates, STOP and resume, aborts from either side and protocol errors.
// Seeds are printed on failure; MADENGINE_SEED replays one.
#include "engine/rmpp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "madengine/wire/sa.hpp"

namespace madengine {
namespace {

using wire::RmppHeader;
using wire::RmppType;
namespace rmpp_flag = wire::rmpp_flag;
namespace rmpp_status = wire::rmpp_status;

constexpr std::uint16_t kLidA = 1;  // the sender's side (an SA)
constexpr std::uint16_t kLidB = 2;  // the receiver's side (a client)

RmppHeader rmpp_of(const MadBuf& m) {
  RmppHeader r;
  std::memcpy(&r, m.mad.bytes.data() + wire::kMadHeaderSize, sizeof r);
  return r;
}
void set_rmpp(MadBuf& m, const RmppHeader& r) { std::memcpy(m.mad.bytes.data() + wire::kMadHeaderSize, &r, sizeof r); }

MadBuf sa_template(std::uint64_t tid) {
  MadBuf b;
  auto& sa = b.as<wire::SaMad>();
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = wire::method::kGetTableResp;
  sa.hdr.tid = wire::be64::from(tid);
  sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
  sa.attr_offset = wire::be16::from(wire::attr_offset_for(64));
  sa.comp_mask = wire::be64::from(0x1234);
  b.addr.lid = kLidB;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  return b;
}

std::vector<std::uint8_t> make_payload(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> p(n);
  std::mt19937_64 rng(seed);
  for (auto& b : p) b = static_cast<std::uint8_t>(rng());
  return p;
}

struct Wire final : TxSink {
  std::deque<MadBuf> q;
  bool send(const MadBuf& b) noexcept override {
    q.push_back(b);
    return true;
  }
};

struct Faults {
  double loss_data = 0;  // DATA (and the sender's ABORT) lost A -> B
  double loss_ctl = 0;   // ACK/STOP/ABORT lost B -> A
  double dup = 0;        // delivered twice
  bool reorder = false;  // each step's batch is shuffled
};

struct Outcome {
  std::optional<RmppSendDone> sent;
  std::optional<RmppRecvDone> recv;
  std::vector<std::uint8_t> payload;
  MadBuf first;
  int send_callbacks = 0;
  int recv_callbacks = 0;
  static void on_sent(void* u, const RmppSendDone& d) noexcept {
    auto* o = static_cast<Outcome*>(u);
    o->sent = d;
    ++o->send_callbacks;
  }
  static void on_recv(void* u, const RmppRecvDone& d) noexcept {
    auto* o = static_cast<Outcome*>(u);
    o->recv = d;
    ++o->recv_callbacks;
    o->payload.assign(d.payload.begin(), d.payload.end());
    if (d.first != nullptr) o->first = *d.first;
    o->recv->payload = {};
    o->recv->first = nullptr;
  }
};

RmppConfig test_config() {
  RmppConfig c;
  c.transfers_max = 8;
  c.segments_max = 1024;
  c.resp_timeout_ns = 50 * kNanosPerMilli;
  c.retries_max = 8;
  c.total_timeout_ns = 300 * kNanosPerSecond;
  c.stop_timeout_ns = 2 * kNanosPerSecond;
  c.linger_ns = 1 * kNanosPerSecond;
  return c;
}

// One sender (A) and one receiver (B) joined by two in-memory wires.
struct Link {
  ManualClock clock;
  Wire a_to_b, b_to_a;
  Outcome out;
  RmppSender sender;
  RmppReceiver receiver;
  std::mt19937_64 rng;
  Faults faults;
  std::uint64_t delivered_data = 0;
  std::uint64_t delivered_ctl = 0;
  std::uint64_t dead_after_data = ~0ull;  // every MAD lost after this many DATA got through

  explicit Link(std::uint64_t seed, RmppConfig cfg = test_config())
      : sender(clock, a_to_b, cfg), receiver(clock, b_to_a, &Outcome::on_recv, &out, cfg), rng(seed) {}

  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  void deliver(Wire& w, bool to_receiver) {
    std::vector<MadBuf> batch(w.q.begin(), w.q.end());
    w.q.clear();
    if (faults.reorder) std::shuffle(batch.begin(), batch.end(), rng);
    for (MadBuf& m : batch) {
      const bool is_data = rmpp_of(m).rmpp_type() == RmppType::kData;
      if (delivered_data >= dead_after_data) continue;
      if (chance(to_receiver ? faults.loss_data : faults.loss_ctl)) continue;
      const int copies = chance(faults.dup) ? 2 : 1;
      m.addr.lid = to_receiver ? kLidA : kLidB;  // arrives from its sender
      for (int c = 0; c < copies; ++c) {
        if (to_receiver) {
          if (is_data) ++delivered_data;
          receiver.on_mad(m);
        } else {
          ++delivered_ctl;
          sender.on_mad(m);
        }
      }
    }
  }

  void step(Nanos dt_ns = kNanosPerMilli) {
    deliver(a_to_b, true);
    deliver(b_to_a, false);
    clock.advance_ns(dt_ns);
    sender.poll(clock.now_ns());
    receiver.poll(clock.now_ns());
  }

  bool both_reported() const { return out.sent.has_value() && out.recv.has_value(); }
  void run(int steps_max) {
    for (int i = 0; i < steps_max && !both_reported(); ++i) step();
  }
};

std::uint64_t base_seed() {
  const char* env = std::getenv("MADENGINE_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 0) : 0x5eed2026ull;
}

// ---- wire facts --------------------------------------------------------------

TEST(Rmpp, SegmentsCarryFlagsNumbersAndPayloadLengths) {
  Link link(1);
  const auto payload = make_payload(450, 7);  // 3 segments: 200 + 200 + 50
  ASSERT_EQ(link.sender.send(sa_template(0x77), payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  ASSERT_EQ(link.a_to_b.q.size(), 1u);  // window of 1 until the first ACK
  const RmppHeader r1 = rmpp_of(link.a_to_b.q[0]);
  EXPECT_EQ(r1.version, 1);
  EXPECT_EQ(r1.rmpp_type(), RmppType::kData);
  EXPECT_EQ(r1.flags(), rmpp_flag::kActive | rmpp_flag::kFirst);
  EXPECT_EQ(r1.data1.get(), 1u);
  EXPECT_EQ(r1.data2.get(), 3u * 20 + 450);  // total, counting each segment's SA header fields
  EXPECT_EQ(link.a_to_b.q[0].as<wire::SaMad>().comp_mask.get(), 0x1234u);  // template fields kept
  EXPECT_EQ(std::memcmp(link.a_to_b.q[0].as<wire::SaMad>().data.data(), payload.data(), 200), 0);
  std::vector<MadBuf> all;
  for (int i = 0; i < 20 && !link.both_reported(); ++i) {
    all.insert(all.end(), link.a_to_b.q.begin(), link.a_to_b.q.end());
    link.step();
  }
  ASSERT_TRUE(link.both_reported());
  ASSERT_EQ(all.size(), 3u);
  const RmppHeader r2 = rmpp_of(all[1]);
  const RmppHeader r3 = rmpp_of(all[2]);
  EXPECT_EQ(r2.flags(), rmpp_flag::kActive);
  EXPECT_EQ(r2.data2.get(), 0u);
  EXPECT_EQ(r3.flags(), rmpp_flag::kActive | rmpp_flag::kLast);
  EXPECT_EQ(r3.data1.get(), 3u);
  EXPECT_EQ(r3.data2.get(), 20u + 50);  // the remainder
  EXPECT_EQ(link.out.payload, payload);
  EXPECT_EQ(link.out.first.as<wire::SaMad>().hdr.tid.get(), 0x77u);
}

TEST(Rmpp, AcksFlipTheResponseBitAndCarryNewWindowLast) {
  Link link(2);
  const auto payload = make_payload(200 * 40, 3);
  ASSERT_EQ(link.sender.send(sa_template(0x99), payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  link.deliver(link.a_to_b, true);
  ASSERT_EQ(link.b_to_a.q.size(), 1u);
  const MadBuf& ack = link.b_to_a.q[0];
  const RmppHeader r = rmpp_of(ack);
  EXPECT_EQ(r.rmpp_type(), RmppType::kAck);
  EXPECT_EQ(r.data1.get(), 1u);
  EXPECT_EQ(r.data2.get(), 1u + 32);  // window_segs
  EXPECT_EQ(ack.hdr().method, wire::method::kGetTable);
  EXPECT_EQ(ack.hdr().tid.get(), 0x99u);
  EXPECT_EQ(ack.addr.lid, kLidA);
  link.run(1000);
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kDone);
  EXPECT_EQ(link.out.payload, payload);
}

// ---- round trips -------------------------------------------------------------

struct Case {
  std::uint32_t segments;
  Faults faults;
  const char* name;
};

void round_trip(std::uint32_t segments, Faults faults, std::uint64_t seed, bool must_finish) {
  SCOPED_TRACE("segments " + std::to_string(segments) + " seed " + std::to_string(seed) +
               " (replay: MADENGINE_SEED=" + std::to_string(seed) + ")");
  Link link(seed);
  link.faults = faults;
  // Sizes that end mid-segment and exactly on a boundary both occur.
  const std::size_t bytes = segments * std::size_t{200} - (seed % 2 == 0 ? 0 : 1 + seed % 150);
  const auto payload = make_payload(bytes, seed);
  ASSERT_EQ(link.sender.segments_for(bytes), segments);
  ASSERT_EQ(link.sender.send(sa_template(seed), payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  link.run(2'000'000);
  // Drain: a final ACK may still be on its way; let the linger expire.
  for (int i = 0; i < 1500; ++i) link.step();
  ASSERT_TRUE(link.out.sent.has_value());
  ASSERT_TRUE(link.out.recv.has_value());
  EXPECT_EQ(link.out.send_callbacks, 1);
  EXPECT_EQ(link.out.recv_callbacks, 1);
  const bool sent_ok = link.out.sent->outcome == RmppOutcome::kDone;
  const bool recv_ok = link.out.recv->outcome == RmppOutcome::kDone;
  if (must_finish) {
    EXPECT_TRUE(sent_ok && recv_ok) << "sender: " << to_string(link.out.sent->outcome) << " status "
                                    << int{link.out.sent->rmpp_status} << ", receiver: "
                                    << to_string(link.out.recv->outcome);
  }
  if (recv_ok) {
    // Whatever the sender concluded, a delivered payload is the sent one.
    ASSERT_EQ(link.out.payload.size(), payload.size());
    EXPECT_TRUE(link.out.payload == payload) << "payload differs";
  }
  // A sender never believes in a transfer the receiver did not complete.
  if (sent_ok) {
    EXPECT_TRUE(recv_ok);
  }
  // The one asymmetric end: the receiver completed, then every final ACK and
  // re-ACK was lost until the sender ran out of retries (the two generals).
  if (recv_ok && !sent_ok) {
    EXPECT_EQ(link.out.sent->rmpp_status, rmpp_status::kTooManyRetries);
  }
  EXPECT_EQ(link.sender.active(), 0u);
  EXPECT_EQ(link.receiver.active(), 0u);
  if (faults.loss_data > 0 && segments >= 100) {
    EXPECT_GT(link.sender.counters().segments_resent, 0u);
  }
}

TEST(Rmpp, RoundTripsWithoutFaults) {
  for (std::uint32_t n : {1u, 2u, 3u, 10u, 100u, 1000u}) {
    round_trip(n, {}, base_seed() + n, true);
    round_trip(n, {}, base_seed() + n + 1, true);
  }
}

TEST(Rmpp, RoundTripsWithLossReorderingAndDuplicates) {
  const Faults faults{.loss_data = 0.05, .loss_ctl = 0.05, .dup = 0.05, .reorder = true};
  for (std::uint32_t n : {1u, 2u, 3u, 10u, 100u, 1000u})
    for (std::uint64_t k = 0; k < 3; ++k) round_trip(n, faults, base_seed() * 31 + n * 7 + k, true);
}

TEST(Rmpp, RoundTripsUnderHeavyLossEndConsistently) {
  // At 30% loss each way some transfers abort; then both sides report it,
  // except that a receiver may complete (with identical bytes) while the
  // sender never hears the final ACK.
  const Faults faults{.loss_data = 0.3, .loss_ctl = 0.3, .dup = 0.1, .reorder = true};
  for (std::uint32_t n : {1u, 3u, 10u, 100u})
    for (std::uint64_t k = 0; k < 4; ++k) round_trip(n, faults, base_seed() * 17 + n * 5 + k, false);
}

TEST(Rmpp, EmptyPayloadIsOneSegment) {
  Link link(5);
  ASSERT_EQ(link.sender.send(sa_template(5), {}, &Outcome::on_sent, &link.out), RmppStart::kOk);
  EXPECT_EQ(rmpp_of(link.a_to_b.q[0]).data2.get(), 20u);
  EXPECT_EQ(rmpp_of(link.a_to_b.q[0]).flags(), rmpp_flag::kActive | rmpp_flag::kFirst | rmpp_flag::kLast);
  link.run(100);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kDone);
  EXPECT_TRUE(link.out.payload.empty());
}

TEST(Rmpp, LostFinalAckIsRepeatedFromLinger) {
  Link link(6);
  const auto payload = make_payload(500, 6);
  ASSERT_EQ(link.sender.send(sa_template(6), payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  for (int i = 0; i < 50; ++i) {
    link.deliver(link.a_to_b, true);
    if (link.out.recv) break;
    link.deliver(link.b_to_a, false);
    link.clock.advance_ns(kNanosPerMilli);
  }
  ASSERT_TRUE(link.out.recv.has_value());
  EXPECT_EQ(link.out.recv->outcome, RmppOutcome::kDone);
  link.b_to_a.q.clear();  // the final ACK is lost
  EXPECT_FALSE(link.out.sent.has_value());
  link.run(1000);
  ASSERT_TRUE(link.out.sent.has_value());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kDone);
  EXPECT_EQ(link.out.recv_callbacks, 1);  // delivered once
  EXPECT_GE(link.receiver.counters().duplicates, 1u);
}

TEST(Rmpp, DuplicateAndStaleAcksAreIgnored) {
  Link link(7);
  const auto payload = make_payload(200 * 100, 7);
  ASSERT_EQ(link.sender.send(sa_template(7), payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  std::vector<MadBuf> acks;
  for (int i = 0; i < 2000 && !link.both_reported(); ++i) {
    link.deliver(link.a_to_b, true);
    acks.insert(acks.end(), link.b_to_a.q.begin(), link.b_to_a.q.end());
    link.b_to_a.q.clear();
    for (const MadBuf& m : acks) link.b_to_a.q.push_back(m);  // every ACK so far, again and again
    link.deliver(link.b_to_a, false);
    link.clock.advance_ns(kNanosPerMilli);
    link.sender.poll(link.clock.now_ns());
    link.receiver.poll(link.clock.now_ns());
  }
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kDone);
  EXPECT_EQ(link.out.payload, payload);
  EXPECT_EQ(link.sender.counters().old_acks, 1u + 2 + 3 + 4);  // step k repeats the k-1 earlier ACKs
  EXPECT_EQ(link.sender.counters().segments_resent, 0u);
}

TEST(Rmpp, ManyTransfersAtOnceAndTableLimits) {
  RmppConfig cfg = test_config();
  cfg.transfers_max = 4;
  cfg.segments_max = 20;
  Link link(8, cfg);
  link.faults = {.loss_data = 0.05, .loss_ctl = 0.05, .dup = 0.05, .reorder = true};
  std::vector<Outcome> outs(4);
  std::vector<std::vector<std::uint8_t>> payloads;
  std::vector<std::vector<std::uint8_t>> received(4);
  struct Collect {
    std::vector<std::vector<std::uint8_t>>* received;
    int done = 0;
    static void cb(void* u, const RmppRecvDone& d) noexcept {
      auto* c = static_cast<Collect*>(u);
      if (d.outcome == RmppOutcome::kDone) (*c->received)[d.key.tid - 100] = {d.payload.begin(), d.payload.end()};
      ++c->done;
    }
  } collect{&received};
  RmppReceiver receiver(link.clock, link.b_to_a, &Collect::cb, &collect, cfg);
  for (std::uint64_t i = 0; i < 4; ++i) {
    payloads.push_back(make_payload(200 * 15 + i * 13, i));
    ASSERT_EQ(link.sender.send(sa_template(100 + i), payloads.back(), &Outcome::on_sent, &outs[i]), RmppStart::kOk);
  }
  EXPECT_EQ(link.sender.send(sa_template(200), payloads[0], &Outcome::on_sent, &link.out), RmppStart::kTableFull);
  EXPECT_EQ(link.sender.send(sa_template(100), payloads[0], &Outcome::on_sent, &link.out), RmppStart::kDuplicateKey);
  EXPECT_EQ(link.sender.send(sa_template(300), make_payload(200 * 21, 1), &Outcome::on_sent, &link.out),
            RmppStart::kTooLarge);
  for (int step = 0; step < 20000 && collect.done < 4; ++step) {
    std::vector<MadBuf> batch(link.a_to_b.q.begin(), link.a_to_b.q.end());
    link.a_to_b.q.clear();
    std::shuffle(batch.begin(), batch.end(), link.rng);
    for (MadBuf& m : batch) {
      if (link.chance(0.05)) continue;
      m.addr.lid = kLidA;
      receiver.on_mad(m);
    }
    link.deliver(link.b_to_a, false);
    link.clock.advance_ns(kNanosPerMilli);
    link.sender.poll(link.clock.now_ns());
    receiver.poll(link.clock.now_ns());
  }
  for (int i = 0; i < 2000; ++i) {
    link.deliver(link.b_to_a, false);
    link.a_to_b.q.clear();
    link.clock.advance_ns(kNanosPerMilli);
    link.sender.poll(link.clock.now_ns());
    receiver.poll(link.clock.now_ns());
  }
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(outs[i].sent.has_value()) << i;
    EXPECT_EQ(outs[i].sent->outcome, RmppOutcome::kDone) << i;
    EXPECT_EQ(received[i], payloads[i]) << i;
  }
  EXPECT_EQ(link.sender.active(), 0u);
}

// ---- STOP ----------------------------------------------------------------------

TEST(Rmpp, StopPausesTheSenderAndResumeCompletes) {
  Link link(9);
  const auto payload = make_payload(200 * 200, 9);
  const MadBuf tmpl = sa_template(9);
  ASSERT_EQ(link.sender.send(tmpl, payload, &Outcome::on_sent, &link.out), RmppStart::kOk);
  for (int i = 0; i < 3; ++i) link.step();
  RmppKey key = RmppKey::of(tmpl);
  key.lid = kLidA;  // the receiver names the transfer by where it comes from
  ASSERT_TRUE(link.receiver.stop(key));
  for (int i = 0; i < 5; ++i) link.step();
  const auto sent_while_stopped = link.sender.counters().segments_sent;
  for (int i = 0; i < 1000; ++i) link.step();  // 1 s, below stop_timeout
  EXPECT_EQ(link.sender.counters().segments_sent, sent_while_stopped);
  EXPECT_EQ(link.sender.counters().stops, 1u);
  EXPECT_FALSE(link.out.sent.has_value());
  ASSERT_TRUE(link.receiver.resume(key));
  link.run(5000);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kDone);
  EXPECT_EQ(link.out.payload, payload);
}

TEST(Rmpp, StopTooLongAbortsBothSides) {
  Link link(10);
  const MadBuf tmpl = sa_template(10);
  ASSERT_EQ(link.sender.send(tmpl, make_payload(200 * 500, 10), &Outcome::on_sent, &link.out), RmppStart::kOk);
  link.step();
  RmppKey key = RmppKey::of(tmpl);
  key.lid = kLidA;
  ASSERT_TRUE(link.receiver.stop(key));
  link.run(10000);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kAborted);
  EXPECT_EQ(link.out.sent->rmpp_status, rmpp_status::kTotalTimeTooLong);
  EXPECT_EQ(link.out.recv->outcome, RmppOutcome::kAbortedByPeer);
  EXPECT_EQ(link.out.recv->rmpp_status, rmpp_status::kTotalTimeTooLong);
}

// ---- aborts ----------------------------------------------------------------------

TEST(Rmpp, ReceiverCancelAbortsTheSender) {
  Link link(11);
  const MadBuf tmpl = sa_template(11);
  ASSERT_EQ(link.sender.send(tmpl, make_payload(200 * 500, 11), &Outcome::on_sent, &link.out), RmppStart::kOk);
  for (int i = 0; i < 3; ++i) link.step();
  RmppKey key = RmppKey::of(tmpl);
  key.lid = kLidA;
  ASSERT_TRUE(link.receiver.cancel(key));
  link.run(100);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.recv->outcome, RmppOutcome::kCancelled);
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kAbortedByPeer);
  EXPECT_EQ(link.out.sent->rmpp_status, rmpp_status::kUnspecified);
}

TEST(Rmpp, SenderCancelAbortsTheReceiver) {
  Link link(12);
  const MadBuf tmpl = sa_template(12);
  ASSERT_EQ(link.sender.send(tmpl, make_payload(200 * 500, 12), &Outcome::on_sent, &link.out), RmppStart::kOk);
  for (int i = 0; i < 3; ++i) link.step();
  ASSERT_TRUE(link.sender.cancel(RmppKey::of(tmpl)));
  link.run(100);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kCancelled);
  EXPECT_EQ(link.out.recv->outcome, RmppOutcome::kAbortedByPeer);
}

TEST(Rmpp, DeadLinkEndsInTooManyRetriesAndTotalTimeLimit) {
  RmppConfig cfg = test_config();
  cfg.total_timeout_ns = 5 * kNanosPerSecond;
  Link link(13, cfg);
  link.dead_after_data = 40;  // the link dies mid-transfer, both ways
  ASSERT_EQ(link.sender.send(sa_template(13), make_payload(200 * 100, 13), &Outcome::on_sent, &link.out),
            RmppStart::kOk);
  link.run(20000);
  ASSERT_TRUE(link.both_reported());
  EXPECT_EQ(link.out.sent->outcome, RmppOutcome::kAborted);
  EXPECT_EQ(link.out.sent->rmpp_status, rmpp_status::kTooManyRetries);
  EXPECT_EQ(link.out.recv->outcome, RmppOutcome::kAborted);
  EXPECT_EQ(link.out.recv->rmpp_status, rmpp_status::kTotalTimeTooLong);
}

// ---- protocol errors ---------------------------------------------------------------

struct Tamper : Link {
  explicit Tamper(std::uint64_t seed) : Link(seed) {}
  // Sends the first window of a 10-segment transfer, returns its segments.
  std::vector<MadBuf> start(std::uint64_t tid) {
    EXPECT_EQ(sender.send(sa_template(tid), make_payload(200 * 10, tid), &Outcome::on_sent, &out), RmppStart::kOk);
    std::vector<MadBuf> segs(a_to_b.q.begin(), a_to_b.q.end());
    for (auto& s : segs) s.addr.lid = kLidA;
    a_to_b.q.clear();
    return segs;
  }
  std::optional<RmppHeader> last_to_a() const {
    if (b_to_a.q.empty()) return std::nullopt;
    return rmpp_of(b_to_a.q.back());
  }
};

TEST(Rmpp, ReceiverAbortsOnInconsistentSegments) {
  {  // LAST on a segment that is not the last
    Tamper t(20);
    auto segs = t.start(20);
    RmppHeader r = rmpp_of(segs[0]);
    r.set_flags(kRmppNoRespTime, rmpp_flag::kActive | rmpp_flag::kFirst | rmpp_flag::kLast);
    set_rmpp(segs[0], r);
    t.receiver.on_mad(segs[0]);
    ASSERT_TRUE(t.out.recv.has_value());
    EXPECT_EQ(t.out.recv->outcome, RmppOutcome::kAborted);
    EXPECT_EQ(t.out.recv->rmpp_status, rmpp_status::kInconsistentLastAndLength);
    EXPECT_EQ(t.last_to_a()->rmpp_type(), RmppType::kAbort);
    t.run(100);  // the sender hears the ABORT
    EXPECT_EQ(t.out.sent->outcome, RmppOutcome::kAbortedByPeer);
    EXPECT_EQ(t.out.sent->rmpp_status, rmpp_status::kInconsistentLastAndLength);
  }
  {  // FIRST on segment 2 of a running transfer
    Tamper t(21);
    auto segs = t.start(21);
    t.receiver.on_mad(segs[0]);
    MadBuf s2 = segs[0];
    RmppHeader r = rmpp_of(s2);
    r.data1 = wire::be32::from(2);
    set_rmpp(s2, r);
    t.receiver.on_mad(s2);
    ASSERT_TRUE(t.out.recv.has_value());
    EXPECT_EQ(t.out.recv->rmpp_status, rmpp_status::kInconsistentFirstAndSegment);
  }
  {  // a segment beyond the granted window
    Tamper t(22);
    auto segs = t.start(22);
    t.receiver.on_mad(segs[0]);  // window now 1..10 (10 segments, window 32)
    MadBuf s = segs[0];
    RmppHeader r = rmpp_of(s);
    r.set_flags(kRmppNoRespTime, rmpp_flag::kActive);
    r.data1 = wire::be32::from(11);
    set_rmpp(s, r);
    t.receiver.on_mad(s);
    ASSERT_TRUE(t.out.recv.has_value());
    EXPECT_EQ(t.out.recv->rmpp_status, rmpp_status::kSegmentNumberTooBig);
  }
  {  // wrong PayloadLength on the last segment
    Tamper t(23);
    ASSERT_EQ(t.sender.send(sa_template(23), make_payload(300, 23), &Outcome::on_sent, &t.out), RmppStart::kOk);
    t.deliver(t.a_to_b, true);   // segment 1
    t.deliver(t.b_to_a, false);  // its ACK opens the window: segment 2 is queued
    ASSERT_EQ(t.a_to_b.q.size(), 1u);
    MadBuf s2 = t.a_to_b.q[0];
    t.a_to_b.q.clear();
    s2.addr.lid = kLidA;
    RmppHeader r = rmpp_of(s2);
    EXPECT_EQ(r.data2.get(), 20u + 100);
    r.data2 = wire::be32::from(20 + 101);
    set_rmpp(s2, r);
    t.receiver.on_mad(s2);
    ASSERT_TRUE(t.out.recv.has_value());
    EXPECT_EQ(t.out.recv->rmpp_status, rmpp_status::kInconsistentLastAndLength);
  }
  {  // a first segment whose PayloadLength cannot hold the class headers
    Tamper t(24);
    auto segs = t.start(24);
    RmppHeader r = rmpp_of(segs[0]);
    r.data2 = wire::be32::from(220 * 3 + 5);  // 4 segments, the last with 5 bytes < 20
    set_rmpp(segs[0], r);
    t.receiver.on_mad(segs[0]);
    EXPECT_FALSE(t.out.recv.has_value());  // refused before any state existed
    ASSERT_TRUE(t.last_to_a().has_value());
    EXPECT_EQ(t.last_to_a()->rmpp_type(), RmppType::kAbort);
    EXPECT_EQ(t.last_to_a()->status, rmpp_status::kInconsistentLastAndLength);
  }
  {  // unsupported RMPP version
    Tamper t(25);
    auto segs = t.start(25);
    RmppHeader r = rmpp_of(segs[0]);
    r.version = 2;
    set_rmpp(segs[0], r);
    t.receiver.on_mad(segs[0]);
    ASSERT_TRUE(t.last_to_a().has_value());
    EXPECT_EQ(t.last_to_a()->status, rmpp_status::kUnsupportedVersion);
  }
}

TEST(Rmpp, ReceiverRefusesTransfersBeyondItsLimits) {
  RmppConfig cfg = test_config();
  cfg.segments_max = 5;
  ManualClock clock;
  Wire out;
  Outcome o;
  RmppReceiver rx(clock, out, &Outcome::on_recv, &o, cfg);
  MadBuf m = sa_template(30);
  set_rmpp(m, RmppHeader{1, static_cast<std::uint8_t>(RmppType::kData),
                         static_cast<std::uint8_t>(kRmppNoRespTime << 3 | rmpp_flag::kActive | rmpp_flag::kFirst),
                         0, wire::be32::from(1), wire::be32::from(220 * 6)});
  EXPECT_TRUE(rx.on_mad(m));
  ASSERT_EQ(out.q.size(), 1u);
  EXPECT_EQ(rmpp_of(out.q[0]).rmpp_type(), RmppType::kAbort);
  EXPECT_EQ(rmpp_of(out.q[0]).status, rmpp_status::kUnspecified);
  EXPECT_EQ(rx.active(), 0u);
  // Not RMPP at all: not ours.
  MadBuf plain = sa_template(31);
  EXPECT_FALSE(rx.on_mad(plain));
  plain.len = 10;
  EXPECT_FALSE(rx.on_mad(plain));
}

// A receiver whose slots all hold finished transfers (lingering to repeat a
// lost final ACK) takes a new transfer in the oldest one's place: a standby
// asking for the same three tables every 200 ms was refused for the whole
// 2 s linger, so most of its rounds never completed.
TEST(Rmpp, LingeringTransfersGiveWayToNewOnes) {
  RmppConfig cfg = test_config();
  cfg.transfers_max = 1;
  ManualClock clock;
  Wire out;
  Outcome o;
  RmppReceiver rx(clock, out, &Outcome::on_recv, &o, cfg);
  const auto one_segment = [](std::uint64_t tid) {
    MadBuf m = sa_template(tid);
    set_rmpp(m, RmppHeader{1, static_cast<std::uint8_t>(RmppType::kData),
                           static_cast<std::uint8_t>(kRmppNoRespTime << 3 | rmpp_flag::kActive | rmpp_flag::kFirst |
                                                     rmpp_flag::kLast),
                           0, wire::be32::from(1), wire::be32::from(20 + 64)});
    return m;
  };
  EXPECT_TRUE(rx.on_mad(one_segment(40)));
  ASSERT_EQ(o.recv_callbacks, 1);
  EXPECT_EQ(o.recv->outcome, RmppOutcome::kDone);
  clock.advance_ns(cfg.linger_ns / 4);  // well inside the first one's linger
  out.q.clear();
  EXPECT_TRUE(rx.on_mad(one_segment(41)));
  ASSERT_EQ(o.recv_callbacks, 2);
  EXPECT_EQ(o.recv->outcome, RmppOutcome::kDone);
  ASSERT_EQ(out.q.size(), 1u);
  EXPECT_EQ(rmpp_of(out.q[0]).rmpp_type(), RmppType::kAck);  // not an ABORT for want of a slot
  EXPECT_EQ(rx.counters().lingers_reclaimed, 1u);
}

TEST(Rmpp, SenderAbortsOnBadAcksAndStops) {
  auto run_one = [](std::uint64_t tid, auto mutate, std::uint8_t expect_status) {
    Tamper t(tid);
    auto segs = t.start(tid);
    t.receiver.on_mad(segs[0]);
    ASSERT_EQ(t.b_to_a.q.size(), 1u);
    MadBuf ack = t.b_to_a.q[0];
    t.b_to_a.q.clear();
    ack.addr.lid = kLidB;
    RmppHeader r = rmpp_of(ack);
    mutate(r);
    set_rmpp(ack, r);
    EXPECT_TRUE(t.sender.on_mad(ack));
    ASSERT_TRUE(t.out.sent.has_value());
    EXPECT_EQ(t.out.sent->outcome, RmppOutcome::kAborted);
    EXPECT_EQ(t.out.sent->rmpp_status, expect_status);
    ASSERT_FALSE(t.a_to_b.q.empty());
    EXPECT_EQ(rmpp_of(t.a_to_b.q.back()).rmpp_type(), RmppType::kAbort);
    t.run(100);  // the receiver hears it
    ASSERT_TRUE(t.out.recv.has_value());
    EXPECT_EQ(t.out.recv->outcome, RmppOutcome::kAbortedByPeer);
  };
  run_one(40, [](RmppHeader& r) { r.data2 = wire::be32::from(0); }, rmpp_status::kNewWindowLastTooSmall);
  run_one(41, [](RmppHeader& r) { r.data1 = wire::be32::from(5); r.data2 = wire::be32::from(9); },
          rmpp_status::kSegmentNumberTooBig);
  run_one(42, [](RmppHeader& r) { r.type = static_cast<std::uint8_t>(RmppType::kStop); r.status = 0; },
          rmpp_status::kIllegalStatus);
  run_one(43, [](RmppHeader& r) { r.type = 9; }, rmpp_status::kBadRmppType);
  run_one(44, [](RmppHeader& r) { r.version = 3; }, rmpp_status::kUnsupportedVersion);
}

TEST(Rmpp, BadConfigurationIsRejected) {
  ManualClock clock;
  Wire w;
  RmppConfig c = test_config();
  c.data_offset = 30;
  EXPECT_THROW(RmppSender(clock, w, c), std::invalid_argument);
  c = test_config();
  c.transfers_max = 0;
  EXPECT_THROW(RmppReceiver(clock, w, nullptr, nullptr, c), std::invalid_argument);
}

}  // namespace
}  // namespace madengine
