# OpenSM's options file ("key value" lines, as `opensm -c FILE` writes it and
# `opensm -F FILE` reads it) to the [sm] keys of madengine.toml that carry
# the same settings (docs/operations.md, "Moving an OpenSM site's files over"):
#   { echo "[sm]"; awk -f scripts/opensm_options_to_toml.awk /etc/opensm/opensm.conf; } > sm-from-opensm.toml
# Options madengine has no key for are left out. Files OpenSM names by
# default but which do not exist are left out too: OpenSM goes on without
# them, madengine refuses a file it was told to read and cannot. A value
# madengine cannot take is left out with a warning on stderr. The priority
# is always written: OpenSM's default is 0, madengine's 15.
# The routing engines madengine has (sm/routing's names; the test
# OpensmOptions.EnginesAreMadengines holds this list to them).
BEGIN { engines_known = "minhop,updn,ftree,dfsssp,nue,dor" }
function readable(f) { return system("test -r '" f "'") == 0 }
function warn(what) { print "opensm_options_to_toml: " what > "/dev/stderr" }
function toml(v) {
  if (v == "TRUE") return "true"
  if (v == "FALSE") return "false"
  if (v ~ /^-?[0-9]+$/) return v
  return "\"" v "\""  # hex keys above 2^63 do not fit a TOML integer: strings, which madengine reads too
}
# One line per key, in the order first seen; a repeated option's last value wins, as in OpenSM.
function emit(key, value) {
  if (!(key in out)) order[++keys] = key
  out[key] = value
}
# A decimal or 0x hex number (OpenSM writes both); -1 for anything else. By
# hand: mawk, Debian's awk, has no strtonum.
function number(s,    v, i, d) {
  if (s ~ /^[0-9]+$/) return s + 0
  if (s !~ /^0[xX][0-9a-fA-F]+$/) return -1
  v = 0
  for (i = 3; i <= length(s); ++i) {
    d = index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
    v = v * 16 + d
  }
  return v
}
# An integer option as a madengine key in lo..hi, its value multiplied by `scale` (a unit change).
function ranged(key, scale, lo, hi,    v) {
  if (number($2) < 0) { warn($1 " " $2 ": not a number: left out"); return 0 }
  v = number($2) * scale
  if (v < lo || v > hi) { warn($1 " " $2 ": madengine's " key " takes " lo ".." hi ": left out"); return 0 }
  emit(key, v)
  return 1
}
$1 == "partition_config_file" { if (readable($2)) emit("partition_config", "\"" $2 "\""); next }
$1 == "qos_policy_file" { if (readable($2)) emit("qos_policy_file", "\"" $2 "\""); next }
$1 == "no_partition_enforcement" { no_enforce = $2 == "TRUE"; next }
$1 == "part_enforce" { enforce = $2; next }
$1 ~ /^(sm_key|m_key|m_key_lease_period|m_key_protection_level|allow_both_pkeys|qos|subnet_prefix)$/ ||
$1 ~ /^qos_(ca_|sw0_|swe_|rtr_)?(max_vls|high_limit|vlarb_high|vlarb_low|sl2vl)$/ {
  if (NF >= 2 && $2 != "(null)") emit($1, toml($2))
  next
}
$1 == "sm_priority" { priority_seen = ranged("priority", 1, 0, 15); next }
$1 ~ /^(max_op_vls)$/ { ranged($1, 1, 1, 5); next }
$1 ~ /^(packet_life_time|head_of_queue_lifetime|leaf_head_of_queue_lifetime)$/ { ranged($1, 1, 0, 31); next }
$1 ~ /^(vl_stall_count|leaf_vl_stall_count)$/ { ranged($1, 1, 0, 7); next }
$1 ~ /^(force_link_speed|force_link_speed_ext|force_link_width)$/ { ranged($1, 1, 0, 255); next }
$1 == "consolidate_ipv6_snm_req" { emit($1, toml($2)); next }
$1 == "lmc" { ranged("lmc", 1, 0, 7); next }
$1 == "subnet_timeout" { ranged("subnet_timeout", 1, 0, 31); next }
$1 == "transaction_timeout" { ranged("transaction_timeout_ms", 1, 1, 60000); next }
$1 == "transaction_retries" { ranged("transaction_retries", 1, 0, 100); next }
$1 == "polling_retry_number" { ranged("ha_poll_retries", 1, 1, 100); next }
$1 == "sminfo_polling_timeout" { ranged("ha_poll_interval_ms", 1, 100, 3600000); next }  # both in ms
$1 == "sweep_interval" {  # OpenSM: seconds, 0 = no light sweeps; madengine always sweeps
  if ($2 == "0") warn("sweep_interval 0: madengine always sweeps (sweep_interval_ms 100..3600000): left out, 10 s")
  else ranged("sweep_interval_ms", 1000, 100, 3600000)
  next
}
$1 == "routing_engine" {
  if (NF < 2 || $2 == "(null)") next
  # A chain "a,b,c" keeps the engines madengine has, in their order.
  n = split($2, engines, ",")
  chain = ""
  for (i = 1; i <= n; ++i) {
    if (index("," engines_known ",", "," engines[i] ",") != 0) chain = chain (chain == "" ? "" : ",") engines[i]
    else warn("routing_engine " engines[i] ": madengine has no such engine (" engines_known "): left out")
  }
  if (chain != "") emit("routing", "\"" chain "\"")
  next
}
$1 == "root_guid_file" {  # one GUID a line (OpenSM's format) to the roots list
  if (NF < 2 || $2 == "(null)") next
  if (!readable($2)) { warn("root_guid_file " $2 ": cannot read it: left out"); next }
  roots = ""
  while ((getline line < $2) > 0) {
    sub(/#.*/, "", line)
    if (split(line, f) >= 1) roots = roots (roots == "" ? "" : ", ") "\"" f[1] "\""
  }
  close($2)
  emit("roots", "[" roots "]")
  next
}
$1 == "guid" && $2 !~ /^0x0*$/ { warn("guid " $2 ": madengine names its port by [transport] ca and port: set them"); next }
END {
  if (!priority_seen) emit("priority", 0)  # OpenSM's default, not madengine's 15
  if (no_enforce) enforce = "off"  # OpenSM's older switch wins over part_enforce
  if (enforce != "") emit("part_enforce", "\"" enforce "\"")
  for (i = 1; i <= keys; ++i) print order[i] " = " out[order[i]]
}
