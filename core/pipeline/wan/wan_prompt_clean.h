// Wan's prompt cleaning (diffusers' WanPipeline prompt_clean, applied before
// its UMT5 tokenizer sees a prompt): HTML character references decoded,
// twice, as html.unescape(html.unescape(p)); the ends trimmed; every run of
// Unicode whitespace made one space.
//
// Two departures, both where upstream itself varies or where a full table
// would be needed:
//   - ftfy.fix_text, which upstream runs first only when the ftfy package is
//     installed, is not run (no mojibake repair);
//   - of HTML's 2,231 named references only &amp; &lt; &gt; &quot; &apos;
//     and &nbsp; are decoded (with their legacy forms without ';' and the
//     upper-case AMP, LT, GT, QUOT); any other name stays as written.
//     Numeric references (&#65; &#x41;) follow HTML5's rules in full, as
//     Python does: Windows-1252 for 0x80-0x9F, U+FFFD for 0, surrogates
//     and values past U+10FFFF, nothing for other controls and
//     noncharacters.
//
// Not here: tokenizing (core/text) or the family (wan_pipeline.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PROMPT_CLEAN_H_
#define DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PROMPT_CLEAN_H_

#include <string>

#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns `prompt` cleaned as above. Whitespace is Unicode's White_Space
// (the `regex` module's \s); the ends are trimmed of that and of U+001C to
// U+001F too, as Python's str.strip() does. Text that is not valid UTF-8 is
// returned as it is, for the encoder to refuse naming the byte.
std::string clean_wan_prompt(absl::string_view prompt);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_WAN_WAN_PROMPT_CLEAN_H_
