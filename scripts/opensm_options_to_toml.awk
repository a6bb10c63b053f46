# OpenSM's options file ("key value" lines, as `opensm -c FILE` writes it and
# `opensm -F FILE` reads it) to the [sm] keys of madengine.toml that carry
# the same settings (docs/operations.md, "Moving an OpenSM site's files over"):
#   { echo "[sm]"; awk -f scripts/opensm_options_to_toml.awk /etc/opensm/opensm.conf; } >> madengine.toml
# Options madengine has no key for are left out. Files OpenSM names by
# default but which do not exist are left out too: OpenSM goes on without
# them, madengine refuses a file it was told to read and cannot.
function readable(f) { return system("test -r '" f "'") == 0 }
function toml(v) {
  if (v == "TRUE") return "true"
  if (v == "FALSE") return "false"
  if (v ~ /^-?[0-9]+$/) return v
  return "\"" v "\""  # hex keys above 2^63 do not fit a TOML integer: strings, which madengine reads too
}
$1 == "partition_config_file" { if (readable($2)) print "partition_config = \"" $2 "\""; next }
$1 == "qos_policy_file" { if (readable($2)) print "qos_policy_file = \"" $2 "\""; next }
$1 == "no_partition_enforcement" { no_enforce = $2 == "TRUE"; next }
$1 == "part_enforce" { enforce = $2; next }
$1 ~ /^(sm_key|m_key|m_key_lease_period|m_key_protection_level|allow_both_pkeys|qos)$/ ||
$1 ~ /^qos_(ca_|sw0_|swe_|rtr_)?(max_vls|high_limit|vlarb_high|vlarb_low|sl2vl)$/ {
  if (NF >= 2 && $2 != "(null)") print $1 " = " toml($2)
}
END {
  if (no_enforce) enforce = "off"  # OpenSM's older switch wins over part_enforce
  if (enforce != "") print "part_enforce = \"" enforce "\""
}
