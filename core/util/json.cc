#include "core/util/json.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

// Thrown from the parser to stop at the first structural problem.
struct Rejected {
  std::string message;
};

// nlohmann's own DOM builder, refusing duplicate keys and deep nesting as the
// events arrive. Not its callback parser, which could do the same: at the
// end of every nested object it rescans the parent's members for discarded
// ones, so a header of n tensor entries took O(n^2) (80,000 entries, under a
// megabyte: two minutes).
class StrictDom {
 public:
  explicit StrictDom(json* result) : dom_(*result, /*allow_exceptions=*/true) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& text) { return value() && dom_.number_float(v, text); }
  bool string(std::string& v) { return value() && dom_.string(v); }
  bool binary(json::binary_t& v) { return value() && dom_.binary(v); }

  bool start_object(std::size_t n) {
    open();
    keys_in_open_objects_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(std::string& key) {
    value();
    if (!keys_in_open_objects_.back().insert(key).second) {
      throw Rejected{absl::StrCat("duplicate key '", bounded(key), "'")};
    }
    return dom_.key(key);
  }
  bool end_object() {
    keys_in_open_objects_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    open();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);  // throws e
  }

 private:
  // A value (or key) inside depth_ open containers; true, or throws.
  bool value() const {
    if (depth_ > kMaxJsonDepth) throw Rejected{absl::StrCat("nesting deeper than ", kMaxJsonDepth)};
    return true;
  }
  void open() {
    value();
    ++depth_;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int depth_ = 0;
  std::vector<std::set<std::string>> keys_in_open_objects_;
};

}  // namespace

absl::StatusOr<nlohmann::json> parse_json_strict(absl::string_view text,
                                                 absl::string_view what) {
  json result;
  StrictDom sax(&result);
  try {
    json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, /*strict=*/true,
                    /*ignore_comments=*/false);
    return result;
  } catch (const Rejected& r) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid JSON: ", r.message));
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": invalid JSON at byte ", e.byte, ": ", bounded(e.what())));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid JSON: ", bounded(e.what())));
  }
}

}  // namespace diffusiond
