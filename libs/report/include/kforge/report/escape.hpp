#pragma once
// Escaping for HTML pages: the one function every text that was not written by kforge itself
// (model answers, crawled code, keys, verifier output, anything read from the database) goes
// through before it is put into a page, whether in an element or in a quoted attribute; and
// for a POSIX shell (the commands the viewer shows, the debug folder's run.sh).

#include <string>
#include <string_view>

namespace kforge::report {

// & < > " ' as character references, and each bidirectional embedding, override or isolate
// control (U+202A-202E, U+2066-2069: Trojan Source, a key that reads backwards) as a visible
// marker <span class=bidi>⟦U+202E⟧</span>, as editors show them; everything else as is. Safe in
// element content and in attribute values quoted with either quote (the marker has no quotes).
std::string html_escape(std::string_view s);

// The same for a form's attribute values (<option value>, <input value>), where the text must
// come back unchanged when the form is sent: the controls are kept (they do not render there).
std::string html_attr(std::string_view s);

// Percent-encodes every byte but RFC 3986's unreserved characters, for a URL query value
// (the result still goes through html_escape when it is put into an attribute).
std::string url_encode(std::string_view s);

// 'text' for a POSIX shell: single quotes, each ' as '\''.
std::string shell_quote(std::string_view s);

}  // namespace kforge::report
