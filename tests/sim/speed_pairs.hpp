// A topology for link-rate tests: one switch S1 with a host pair "A<i>" /
// "B<i>" on every width (1x 2x 4x 8x 12x) and speed (SDR to XDR), both ends
// of each link enabling just that width and speed (ibsim's w= s= e= masks,
// x= for XDR); a host "N" on S1 at 4x NDR and a host "X" behind S2, which
// hangs off S1 through a 4x HDR link. kSpeedPairRate holds IBA's rate code
// for pair i = speed * 5 + width. Test data, shared by the C ABI test and
// the SA test on the sim.
#pragma once

#include <array>
#include <string>

namespace madengine::testing {

struct SpeedCase {
  const char* name;
  unsigned s, e, x;  // LinkSpeedEnabled, LinkSpeedExtEnabled, LinkSpeedExtEnabled2 masks
};
inline constexpr std::array<SpeedCase, 8> kPairSpeeds{{
    {"SDR", 1, 0, 0}, {"DDR", 2, 0, 0}, {"QDR", 4, 0, 0}, {"FDR", 7, 1, 0},
    {"EDR", 7, 2, 0}, {"HDR", 7, 4, 0}, {"NDR", 7, 8, 0}, {"XDR", 7, 8, 1},
}};
inline constexpr std::array<unsigned, 5> kPairWidths{1, 16, 2, 4, 8};  // 1x 2x 4x 8x 12x
// IBA rate codes, [speed][width] in the orders above.
inline constexpr int kSpeedPairRate[8][5] = {
    {2, 5, 3, 6, 4},      {5, 3, 6, 7, 8},      {3, 6, 7, 9, 10},     {11, 19, 12, 13, 14},
    {15, 20, 16, 17, 18}, {20, 16, 17, 21, 22}, {16, 17, 21, 23, 24}, {17, 21, 23, 24, 24},
};

inline std::string speed_pair_options(unsigned w, const SpeedCase& c) {
  std::string o = "\tw=" + std::to_string(w) + "\ts=" + std::to_string(c.s);
  if (c.e) o += "\te=" + std::to_string(c.e);
  if (c.x) o += "\tx=" + std::to_string(c.x);
  return o;
}

inline std::string speed_pairs_topology() {
  std::string hosts, s1, s2;
  const SpeedCase ndr = kPairSpeeds[6], hdr = kPairSpeeds[5];
  unsigned port = 1;
  for (unsigned si = 0; si < kPairSpeeds.size(); ++si)
    for (unsigned wi = 0; wi < kPairWidths.size(); ++wi)
      for (const char* side : {"A", "B"}) {
        const std::string name = std::string(side) + std::to_string(si * 5 + wi);
        const std::string o = speed_pair_options(kPairWidths[wi], kPairSpeeds[si]);
        hosts += "Hca\t1 \"" + name + "\"\n[1]\t\"S1\"[" + std::to_string(port) + "]" + o + "\n\n";
        s1 += "[" + std::to_string(port++) + "]\t\"" + name + "\"[1]" + o + "\n";
      }
  hosts += "Hca\t1 \"N\"\n[1]\t\"S1\"[" + std::to_string(port) + "]" + speed_pair_options(2, ndr) + "\n\n";
  s1 += "[" + std::to_string(port++) + "]\t\"N\"[1]" + speed_pair_options(2, ndr) + "\n";
  s1 += "[" + std::to_string(port) + "]\t\"S2\"[1]" + speed_pair_options(2, hdr) + "\n";
  s2 += "[1]\t\"S1\"[" + std::to_string(port) + "]" + speed_pair_options(2, hdr) + "\n";
  hosts += "Hca\t1 \"X\"\n[1]\t\"S2\"[2]" + speed_pair_options(2, ndr) + "\n\n";
  s2 += "[2]\t\"X\"[1]" + speed_pair_options(2, ndr) + "\n";
  return hosts + "Switch\t" + std::to_string(port) + " \"S1\"\n" + s1 + "\nSwitch\t2 \"S2\"\n" + s2;
}

}  // namespace madengine::testing
