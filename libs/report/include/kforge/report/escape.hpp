#pragma once
// Escaping for HTML pages: the one function every text that was not written by kforge itself
// (model answers, crawled code, keys, verifier output, anything read from the database) goes
// through before it is put into a page, whether in an element or in a quoted attribute.

#include <string>
#include <string_view>

namespace kforge::report {

// & < > " ' as character references; everything else as is. Safe in element content and in
// attribute values quoted with either quote.
std::string html_escape(std::string_view s);

// Percent-encodes every byte but RFC 3986's unreserved characters, for a URL query value
// (the result still goes through html_escape when it is put into an attribute).
std::string url_encode(std::string_view s);

}  // namespace kforge::report
