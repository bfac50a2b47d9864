// The result of decoding bytes from the wire: the value, or the reason it was refused. Malformed
// input is expected on a wire (the host may be buggy or hostile), so it is a value the caller must
// look at rather than an exception; the server sends the reason back as OP_ERROR.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace channel::protocol {

struct DecodeError {
  std::string reason;  // one line, names the opcode and the field
};

template <typename T>
class Decoded {
 public:
  Decoded(T value) : result_(std::move(value)) {}
  Decoded(DecodeError error) : result_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(result_); }
  // value() on an error and error() on a value throw std::bad_variant_access.
  const T& value() const& { return std::get<T>(result_); }
  T&& value() && { return std::get<T>(std::move(result_)); }
  const DecodeError& error() const { return std::get<DecodeError>(result_); }

 private:
  std::variant<T, DecodeError> result_;
};

}  // namespace channel::protocol
