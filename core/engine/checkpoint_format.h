/// \file core/engine/checkpoint_format.h
/// The header of a checkpoint file (core/engine/checkpoint.h describes the layout): shared by
/// the writer (checkpoint.cpp) and the reader (checkpoint_read.cpp). Internal to the engine.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetsgd {
namespace checkpoint_format {

inline constexpr char kMagic[8] = {'H', 'S', 'G', 'D', 'C', 'K', 'P', 'T'};
inline constexpr std::size_t kHeaderBytes =
    sizeof kMagic + sizeof(std::uint32_t) + 2 * sizeof(std::uint64_t);

}  // namespace checkpoint_format
}  // namespace hetsgd
