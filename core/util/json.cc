#include "core/util/json.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace diffusiond {
namespace {

// Thrown from the parser callback to stop at the first structural problem.
struct Rejected {
  std::string message;
};

}  // namespace

absl::StatusOr<nlohmann::json> parse_json_strict(absl::string_view text,
                                                 absl::string_view what) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> keys_in_open_objects;
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event,
                                            json& parsed) {
    if (depth > kMaxJsonDepth) {
      throw Rejected{absl::StrCat("nesting deeper than ", kMaxJsonDepth)};
    }
    switch (event) {
      case json::parse_event_t::object_start:
        keys_in_open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys_in_open_objects.empty()) keys_in_open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!keys_in_open_objects.back().insert(key).second) {
          throw Rejected{absl::StrCat("duplicate key '", key, "'")};
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const Rejected& r) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid JSON: ", r.message));
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": invalid JSON at byte ", e.byte, ": ", e.what()));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid JSON: ", e.what()));
  }
}

}  // namespace diffusiond
