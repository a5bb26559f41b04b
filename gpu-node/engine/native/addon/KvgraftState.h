#pragma once
#include "napi.h"

// Adds `kvgraft` (sequence state in caller memory, pinned buffers, sequence copies) to the addon's exports.
void kvgraftStateInit(Napi::Object exports);
