// A 64-bit identity of a model for files that hold state only that model can use (snapshots):
// two models get the same fingerprint only if they agree on the resolved hyperparameters, the
// tensor table (names, types, dims), the leading bytes of every tensor's data and the matrices
// converted on load (with their types). The data sample tells apart fine-tunes of one
// architecture, which share everything else, without reading gigabytes of weights.
#pragma once

#include <cstdint>

#include "model/model.h"

namespace channel {

uint64_t model_fingerprint(const Model& model);

}  // namespace channel
