// Every SA record layout (IBA 15.2.5) in one include, plus the GetTable
// record indexing helpers. The SA MAD itself is in sa.hpp.
#pragma once

#include "madengine/wire/class_port_info.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/common.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/guid_info_record.hpp"
#include "madengine/wire/sa/inform_info.hpp"
#include "madengine/wire/sa/lft_record.hpp"
#include "madengine/wire/sa/link_record.hpp"
#include "madengine/wire/sa/mc_member_record.hpp"
#include "madengine/wire/sa/mft_record.hpp"
#include "madengine/wire/sa/multi_path_record.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "madengine/wire/sa/pkey_table_record.hpp"
#include "madengine/wire/sa/port_info_record.hpp"
#include "madengine/wire/sa/service_record.hpp"
#include "madengine/wire/sa/sl2vl_record.hpp"
#include "madengine/wire/sa/sm_info_record.hpp"
#include "madengine/wire/sa/switch_info_record.hpp"
#include "madengine/wire/sa/vl_arb_record.hpp"
