// The two renderings of a retention certificate: JSON with stable keys in a fixed order (tools
// read it) and text laid out like the seed's certificate (people read it). Both carry the seed's
// theorem ids for the sections the seed ties to them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "kv/retention_certificate.h"

namespace channel::kv {

nlohmann::ordered_json certificate_json(const Certificate& certificate);

std::string certificate_text(const Certificate& certificate);

}  // namespace channel::kv
