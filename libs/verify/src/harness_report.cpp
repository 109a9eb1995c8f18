#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/worker_event.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <stdexcept>

#include "kforge/core/embedded.hpp"

namespace kforge::verify {

std::span<const EmbeddedFile> harness_report_fields();  // cmake/Embed.cmake
std::span<const EmbeddedFile> harness_worker_events();  // cmake/Embed.cmake
std::span<const EmbeddedFile> harness_worker_ops();     // cmake/Embed.cmake

namespace {

// report_fields.txt, parsed: the same grammar as kforge_harness/report_schema.py.
struct Type;
struct Alt {
  enum Kind { integer, number, boolean, string, any, object, list, map, name } kind = any;
  bool open = false;                 // object+
  std::shared_ptr<const Type> elem;  // list<T>, map<T>
  std::vector<std::string> names;    // name<V>
};
struct Type {
  std::vector<Alt> alts;
  bool nullable = false;
  std::string text;
};
struct Field {
  std::string path, name;
  Type type;
  bool required = false;
  bool pool = false;  // written by the pool, never by the harness
};
struct Schema {
  std::string file;  // report_fields.txt, worker_events.txt, worker_ops.txt
  std::string of;    // what its objects are, for messages: "the report", "the event"
  int version = 0;
  std::vector<Field> fields;
  std::map<std::string, std::vector<const Field*>> children;  // declared parent path -> fields
  std::map<std::string, std::size_t> fds;  // worker_ops.txt's `fds OP N`: op -> descriptors
  std::vector<std::string> files;          // worker_ops.txt's `file NAME`: top-level, not a message
  bool is_file(const std::string& name) const {
    return std::find(files.begin(), files.end(), name) != files.end();
  }
};

[[noreturn]] void bad_schema(const std::string& why) {
  // The files are compiled in and tested (tests/verify/harness_report_test.cpp): a malformed one
  // is a build of kforge that must not run.
  throw std::logic_error("report_fields.txt, worker_events.txt or worker_ops.txt: " + why);
}

std::vector<std::string> split_top(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '<';
    depth -= c == '>';
    if (c == sep && depth == 0)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

Type parse_type(const std::string& text);

Alt parse_alt(const std::string& a) {
  static const std::pair<const char*, Alt::Kind> kScalars[] = {
      {"int", Alt::integer},   {"number", Alt::number}, {"bool", Alt::boolean},
      {"string", Alt::string}, {"any", Alt::any},       {"list", Alt::list}};
  Alt alt;
  for (const auto& [word, kind] : kScalars)
    if (a == word) return alt.kind = kind, alt;
  if (a == "object" || a == "object+")
    return alt.kind = Alt::object, alt.open = a.back() == '+', alt;
  auto inner = [&](const char* head) -> std::optional<std::string> {
    std::string h = std::string(head) + "<";
    if (a.rfind(h, 0) != 0 || a.back() != '>') return std::nullopt;
    return a.substr(h.size(), a.size() - h.size() - 1);
  };
  if (auto t = inner("list"))
    return alt.kind = Alt::list, alt.elem = std::make_shared<Type>(parse_type(*t)), alt;
  if (auto t = inner("map"))
    return alt.kind = Alt::map, alt.elem = std::make_shared<Type>(parse_type(*t)), alt;
  if (auto v = inner("name")) {
    alt.kind = Alt::name;
    alt.names = store::vocabulary_lines(*v + ".txt");
    if (alt.names.empty()) bad_schema("no vocabulary " + *v);
    return alt;
  }
  bad_schema("'" + a + "' is not a type");
}

Type parse_type(const std::string& text) {
  Type t;
  t.text = text;
  std::string body = text;
  if (!body.empty() && body.back() == '?') t.nullable = true, body.pop_back();
  for (const auto& a : split_top(body, '|')) t.alts.push_back(parse_alt(a));
  return t;
}

std::string parent_of(const std::string& path) {
  auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

Schema load_schema(std::span<const EmbeddedFile> files, std::string file, std::string of,
                   bool with_fds = false) {
  Schema s;
  s.file = std::move(file);
  s.of = std::move(of);
  for (const auto& line : listed_lines(files)) {
    std::istringstream in(line);
    std::vector<std::string> parts;
    for (std::string w; in >> w;) parts.push_back(w);
    if (parts.size() == 2 && parts[0] == "version") {
      s.version = std::stoi(parts[1]);
      continue;
    }
    if (with_fds && parts.size() == 3 && parts[0] == "fds") {
      s.fds[parts[1]] = static_cast<std::size_t>(std::stoul(parts[2]));
      continue;
    }
    if (with_fds && parts.size() == 2 && parts[0] == "file") {
      s.files.push_back(parts[1]);
      continue;
    }
    if (parts.size() != 4 || (parts[2] != "required" && parts[2] != "optional"))
      bad_schema("not PATH TYPE PRESENCE WRITER: " + line);
    Field f;
    f.path = parts[0];
    f.name = f.path.substr(f.path.rfind('.') == std::string::npos ? 0 : f.path.rfind('.') + 1);
    f.type = parse_type(parts[1]);
    f.required = parts[2] == "required";
    f.pool = parts[3] == "pool";
    s.fields.push_back(std::move(f));
  }
  if (s.version <= 0) bad_schema("no version line");
  for (const auto& f : s.fields) s.children[parent_of(f.path)].push_back(&f);
  if (with_fds)
    for (const Field* f : s.children[""])
      if (!s.fds.count(f->name) && !s.is_file(f->name))
        bad_schema(s.file + ": no `fds " + f->name + " N` line");
  for (const auto& n : s.files)
    if (std::none_of(s.children[""].begin(), s.children[""].end(),
                     [&](const Field* f) { return f->name == n; }))
      bad_schema(s.file + ": `file " + n + "` declares no fields");
  return s;
}

const Schema& schema() {
  static const Schema s = load_schema(harness_report_fields(), "report_fields.txt", "the report");
  return s;
}

const Schema& event_schema() {
  static const Schema s = load_schema(harness_worker_events(), "worker_events.txt", "the event");
  return s;
}

const Schema& op_schema() {
  static const Schema s = load_schema(harness_worker_ops(), "worker_ops.txt", "the message", true);
  return s;
}

bool matches(const nlohmann::json& v, const Alt& a) {
  switch (a.kind) {
    case Alt::any:
      return true;
    case Alt::integer:
      return v.is_number_integer();
    case Alt::number:
      return v.is_number();
    case Alt::boolean:
      return v.is_boolean();
    case Alt::string:
      return v.is_string();
    case Alt::name:
      return v.is_string() &&
             std::find(a.names.begin(), a.names.end(), v.get<std::string>()) != a.names.end();
    case Alt::list:
      return v.is_array();
    case Alt::object:
    case Alt::map:
      return v.is_object();
  }
  return false;
}

const char* json_type(const nlohmann::json& v) {
  if (v.is_number_integer()) return "int";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "bool";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  if (v.is_object()) return "object";
  return "null";
}

using Problem = std::optional<std::string>;

Problem check_object(const Schema& sch, const nlohmann::json& obj, const std::string& shown,
                     const std::string& decl, bool open, ReportOrigin origin);

Problem check_value(const Schema& sch, const nlohmann::json& v, const Type& t,
                    const std::string& shown, const std::string& decl, ReportOrigin origin) {
  if (v.is_null()) {  // `any` takes null too
    bool any =
        std::any_of(t.alts.begin(), t.alts.end(), [](const Alt& a) { return a.kind == Alt::any; });
    return t.nullable || any ? Problem() : shown + "\" is null, declared " + t.text;
  }
  for (const auto& a : t.alts) {
    if (!matches(v, a)) continue;
    if (a.kind == Alt::object) return check_object(sch, v, shown, decl, a.open, origin);
    if (a.kind == Alt::list && a.elem) {
      for (std::size_t i = 0; i < v.size(); ++i)
        if (auto p = check_value(sch, v[i], *a.elem, shown + "[" + std::to_string(i) + "]",
                                 decl + "[]", origin))
          return p;
    }
    if (a.kind == Alt::map) {
      for (const auto& [k, item] : v.items())
        if (auto p = check_value(sch, item, *a.elem, shown + "{" + k + "}", decl + "{}", origin))
          return p;
    }
    return std::nullopt;
  }
  return shown + "\" is " + json_type(v) +
         (v.is_string() ? " '" + v.get<std::string>() + "'" : "") + ", declared " + t.text;
}

Problem check_object(const Schema& sch, const nlohmann::json& obj, const std::string& shown,
                     const std::string& decl, bool open, ReportOrigin origin) {
  static const std::vector<const Field*> none;
  auto it = sch.children.find(decl);
  const auto& declared = it == sch.children.end() ? none : it->second;
  std::string at = shown.empty() ? std::string() : shown + ".";
  for (const Field* f : declared) {
    auto v = obj.find(f->name);
    if (v == obj.end()) {
      if (f->required) return at + f->name + "\" is missing";
      continue;
    }
    if (f->pool && origin == ReportOrigin::harness)
      return at + f->name + "\" is the pool's to write, not the harness's";
    if (auto p = check_value(sch, *v, f->type, at + f->name, f->path, origin)) return p;
  }
  if (open) return std::nullopt;
  for (const auto& [name, value] : obj.items()) {
    (void)value;
    bool known = false;
    for (const Field* f : declared) known = known || f->name == name;
    if (!known) return at + name + "\" is not a field of " + sch.of + " (" + sch.file + ")";
  }
  return std::nullopt;
}

// Typed reads of what the check has already let through: no defaults.
std::optional<std::int64_t> opt_int(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  return it->get<std::int64_t>();
}
std::optional<double> opt_num(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}
std::optional<std::string> opt_str(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  return it->get<std::string>();
}
std::string str_or_empty(const nlohmann::json& o, const char* key) {
  return opt_str(o, key).value_or(std::string());
}
const nlohmann::json* child(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}
std::vector<std::string> strings(const nlohmann::json* list) {
  std::vector<std::string> out;
  if (list)
    for (const auto& s : *list) out.push_back(s.get<std::string>());
  return out;
}

CompileCost compile_cost(const nlohmann::json& c) {
  CompileCost out;
  out.count = c.at("count").get<std::int64_t>();
  out.ms = c.at("ms").get<std::int64_t>();
  out.cpu_ms = opt_int(c, "cpu_ms");
  out.child_cpu_ms = opt_int(c, "child_cpu_ms");
  return out;
}

HarnessReport::Triton triton_of(const nlohmann::json& t) {
  HarnessReport::Triton out;
  out.kernels = strings(&t.at("kernels"));
  for (const auto& [k, n] : t.at("launches").items())
    out.launches.emplace_back(k, n.get<std::int64_t>());
  out.compile = compile_cost(t.at("compile"));
  out.launcher = compile_cost(t.at("launcher"));
  for (const auto& a : t.at("autotune_used"))
    out.autotune_used.emplace_back(a.at("kernel").get<std::string>(),
                                   a.at("config").get<std::string>());
  return out;
}

SpeedLabel speed_of(const nlohmann::json& s) {
  SpeedLabel l;
  l.raw = s;
  l.timed = s.at("timed").get<bool>();
  l.reason = str_or_empty(s, "reason");
  if (const auto* env = child(s, "environment")) l.device = env->at("device").get<std::string>();
  if (const auto* ks = child(s, "kernels"); ks && !ks->empty()) {
    double sum = 0;
    bool any = false;
    for (const auto& k : *ks)
      if (auto t = opt_num(k, "time_us")) sum += *t, any = true;
    if (any) l.kernel_us = l.kernels_sum_us = sum;
    l.gbps = opt_num((*ks)[0], "gbps");
    l.fraction_of_peak = opt_num((*ks)[0], "fraction_of_peak");
  }
  if (const auto* r = child(s, "reference")) {
    l.speedup = opt_num(*r, "speedup");
    l.reference_us = opt_num(*r, "reference_us");
    if (const auto* ci = child(*r, "ci"); ci && ci->size() == 2) {
      l.speedup_lo = (*ci)[0].get<double>();
      l.speedup_hi = (*ci)[1].get<double>();
    }
    l.kernel_share = opt_num(*r, "kernel_share");
    l.launches_per_call = opt_int(*r, "launches_per_call");
    if (const auto* ri = child(*r, "ran_instead"))
      for (const auto& k : *ri)
        l.ran_instead.emplace_back(k.at("name").get<std::string>(), k.at("us").get<double>());
    l.wrapper_us = opt_num(*r, "time_us");
    if (!l.kernel_us) l.kernel_us = l.wrapper_us;
    if (!l.gbps) l.gbps = opt_num(*r, "gbps");
    if (!l.fraction_of_peak) l.fraction_of_peak = opt_num(*r, "fraction_of_peak");
  }
  l.min_speedup = opt_num(s, "min_speedup");
  if (const auto* p = child(s, "pass_perf")) l.pass_perf = p->get<bool>();
  l.flags = strings(child(s, "flags"));
  l.exclusive_ms = opt_int(s, "exclusive_ms");
  l.min_kernel_share = opt_num(s, "min_kernel_share");
  if (const auto* m = child(s, "memory")) {
    l.input_bytes = opt_int(*m, "input_bytes");
    l.memory_per_input_byte = opt_num(*m, "per_input_byte");
  }
  return l;
}

std::vector<TargetResult> targets_of(const nlohmann::json& cc) {
  std::vector<TargetResult> out;
  for (const auto& [name, t] : cc.at("targets").items()) {
    TargetResult r;
    r.target = name;
    r.result = *value_of(store::kTargetResultNames, t.at("result").get<std::string>());
    r.error = str_or_empty(t, r.result == store::TargetResultKind::error ? "error" : "reason");
    r.kernel = str_or_empty(t, "kernel");
    out.push_back(std::move(r));
  }
  return out;
}

HarnessReport::Battery battery_of(const nlohmann::json& b) {
  HarnessReport::Battery out;
  if (const auto* ms = child(b, "mutants"))
    for (const auto& e : *ms) {
      HarnessReport::OutputMutant m{e.at("mutant").get<std::string>(),
                                    e.at("result").get<std::string>(), std::nullopt};
      if (auto l = opt_int(e, "launch")) m.launch = static_cast<int>(*l);
      out.mutants.push_back(std::move(m));
    }
  out.not_run = strings(child(b, "not_run"));
  out.stopped = str_or_empty(b, "stopped");
  if (out.stopped.empty()) out.stopped = str_or_empty(b, "error");
  out.raw = b;
  return out;
}

HarnessReport::KernelBattery kernel_battery_of(const nlohmann::json& kb) {
  HarnessReport::KernelBattery out;
  for (const auto& e : kb.at("mutants")) out.results.push_back(str_or_empty(e, "result"));
  for (const auto& e : kb.at("survived")) out.survived.push_back(*KernelSurvivor::from_json(e));
  out.stopped = str_or_empty(kb, "stopped");
  out.raw = kb;
  return out;
}

HarnessReport::Integrity integrity_of(const nlohmann::json& in) {
  HarnessReport::Integrity out;
  out.armed = in.at("armed").get<bool>();
  out.watched = in.at("watched").get<std::int64_t>();
  out.tampered = in.at("tampered").get<bool>();
  for (const auto& e : in.at("replaced"))
    out.replaced.push_back({e.at("what").get<std::string>(), e.at("how").get<std::string>(),
                            e.at("phase").get<std::string>()});
  for (const auto& e : in.at("scans"))
    out.scans.push_back({e.at("event").get<std::string>(), e.at("phase").get<std::string>()});
  out.raw = in;
  return out;
}

HarnessReport::Controls controls_of(const nlohmann::json& c) {
  HarnessReport::Controls out;
  for (const auto& e : c.at("runs"))
    out.runs.push_back({e.at("kind").get<std::string>(), e.at("at").get<std::string>(),
                        e.at("result").get<std::string>(), e.at("duration_ms").get<std::int64_t>(),
                        opt_str(e, "by")});
  out.failed = c.at("failed").get<bool>();
  // A failed control always voids every result (controls.py), so "failed" alone says so too.
  out.voided = out.failed;
  if (const auto* v = child(c, "void")) out.voided = out.voided || v->get<bool>();
  out.void_reason = opt_str(c, "void_reason");
  if (const auto* i = child(c, "infrastructure")) out.infrastructure = i->get<bool>();
  // Out of GPU memory voids every result too (controls.py writes "void" with it).
  out.voided = out.voided || out.infrastructure;
  out.raw = c;
  return out;
}

HarnessReport::Test test_of(const nlohmann::json& t) {
  HarnessReport::Test out;
  out.name = t.at("name").get<std::string>();
  out.status = t.at("status").get<std::string>();
  out.duration_ms = opt_int(t, "duration_ms");
  const auto* at_import = child(t, "ran_at_import");
  out.ran_at_import = at_import && at_import->get<bool>();
  out.exception = opt_str(t, "exception");
  out.message = opt_str(t, "message");
  out.traceback = opt_str(t, "traceback");
  if (const auto* w = child(t, "where")) {
    out.where_section = opt_str(*w, "section");
    out.where_line = opt_int(*w, "line");
  }
  return out;
}

HarnessReport::Differential differential_of(const nlohmann::json& d) {
  HarnessReport::Differential out;
  for (const auto& t : d.at("transforms"))
    out.transforms.push_back({t.at("transform").get<std::string>(),
                              t.at("result").get<std::string>(), str_or_empty(t, "detail")});
  out.failed = opt_str(d, "failed");
  return out;
}

HarnessReport::Origin origin_of(const nlohmann::json& o) {
  HarnessReport::Origin out;
  for (const auto& c : o.at("checked")) {
    HarnessReport::Origin::Check check;
    check.on = c.at("on").get<std::string>();
    check.result = c.at("result").get<std::string>();
    if (const auto& share = c.at("share"); !share.is_null()) check.share = share.get<double>();
    check.elements = c.at("elements").get<std::int64_t>();
    check.runs = c.at("runs").get<std::int64_t>();
    check.detail = str_or_empty(c, "detail");
    out.checked.push_back(std::move(check));
  }
  out.host = opt_str(o, "host");
  out.bound = o.at("bound").get<double>();
  return out;
}

// The pool's fields of a stored report (checked against the same declarations).
void read_pool_parts(const nlohmann::json& r, HarnessReport& h) {
  h.guard = strings(child(r, "guard"));
  if (const auto* p = child(r, "pool"))
    h.pool = HarnessReport::PoolFacts{opt_int(*p, "queue_ms"), opt_int(*p, "cpu_ms"),
                                      opt_int(*p, "dispatched_ms")};
  if (const auto* m = child(r, "mutant")) {
    HarnessReport::MutantRuns runs;
    if (const auto* in = child(*m, "integrity")) runs.integrity = integrity_of(*in);
    if (const auto* c = child(*m, "controls")) runs.controls = controls_of(*c);
    runs.guard = strings(child(*m, "guard"));
    runs.lost = strings(child(*m, "lost"));
    runs.duration_ms = opt_int(*m, "duration_ms");
    runs.compiles = opt_int(*m, "compiles");
    if (const auto* t = child(*m, "phase_times")) runs.phase_times = *t;
    h.mutant = std::move(runs);
  }
  if (const auto* m = child(r, "mutation")) {
    HarnessReport::Mutation out;
    out.killed = m->at("killed").get<std::int64_t>();
    out.applicable = m->at("applicable").get<std::int64_t>();
    out.survived = strings(&m->at("survived"));
    out.not_applicable = strings(&m->at("not_applicable"));
    if (const auto* k = child(*m, "kernel")) {
      out.kernel = HarnessReport::Mutation::KernelScore{k->at("killed").get<std::int64_t>(),
                                                        k->at("applicable").get<std::int64_t>(),
                                                        k->at("equivalent").get<std::int64_t>()};
      for (const auto& e : k->at("survived"))
        out.kernel_survived.push_back(*KernelSurvivor::from_json(e));
    }
    out.raw = *m;
    h.mutation = std::move(out);
  }
  if (const auto* cc = child(r, "cross_compile"))
    h.required_targets = strings(child(*cc, "required"));
}

HarnessReport read_checked(const nlohmann::json& r) {
  HarnessReport h;
  h.version = r.at("harness").get<int>();
  h.verdict = *value_of(store::kVerdictNames, r.at("verdict").get<std::string>());
  h.detail = r.at("detail").get<std::string>();
  h.phase = r.at("phase").get<std::string>();
  h.environment = opt_str(r, "environment");
  h.script = opt_str(r, "script");
  h.import_ms = opt_int(r, "import_ms");
  if (const auto* ts = child(r, "tests")) {
    h.tests.emplace();
    for (const auto& t : *ts) h.tests->push_back(test_of(t));
  }
  if (const auto* secs = child(r, "sections"))
    for (const auto& [name, lines] : secs->items())
      h.sections.emplace_back(name, lines.get<std::vector<std::int64_t>>());
  if (const auto* t = child(r, "triton")) h.triton = triton_of(*t);
  h.code_kernels = strings(child(r, "code_kernels"));
  if (const auto* p = child(r, "prestart"))
    h.prestart =
        HarnessReport::Prestart{opt_int(*p, "ms"), opt_int(*p, "cpu_ms"), opt_int(*p, "waited_ms")};
  if (const auto* c = child(r, "coverage"))
    h.coverage =
        HarnessReport::Coverage{c->at("constant_outputs").get<bool>(), c->at("outputs"), *c};
  if (const auto* b = child(r, "bounds"))
    h.bounds = HarnessReport::Bounds{b->at("out_of_bounds").get<bool>(), str_or_empty(*b, "detail"),
                                     child(*b, "fault") != nullptr};
  h.mutants_void = opt_str(r, "mutants_void");
  if (const auto* d = child(r, "differential")) h.differential = differential_of(*d);
  if (const auto* o = child(r, "origin")) h.origin = origin_of(*o);
  if (const auto* s = child(r, "speed")) h.speed = speed_of(*s);
  if (const auto* cc = child(r, "cross_compile")) h.cross_compile = targets_of(*cc);
  if (const auto* b = child(r, "battery")) h.battery = battery_of(*b);
  if (const auto* kb = child(r, "kernel_battery")) h.kernel_battery = kernel_battery_of(*kb);
  if (const auto* p = child(r, "poisoned_bytes")) h.poisoned_bytes = *p;
  if (const auto* m = child(r, "mutant_phase")) h.mutant_phase = m->get<bool>();
  if (const auto* in = child(r, "integrity")) h.integrity = integrity_of(*in);
  if (const auto* c = child(r, "controls")) h.controls = controls_of(*c);
  if (const auto* g = child(r, "gpu_lock"))
    h.gpu_lock = HarnessReport::GpuLock{opt_int(*g, "timed_sections"), opt_int(*g, "stalls")};
  if (const auto* t = child(r, "phase_times")) h.phase_times = *t;
  if (const auto* e = child(r, "phase_errors")) h.phase_errors = *e;
  if (const auto* s = child(r, "phase_state")) h.phase_state = *s;
  read_pool_parts(r, h);
  return h;
}

}  // namespace

nlohmann::json KernelSurvivor::to_json() const {
  return {{"mutant", mutant},
          {"op", op},
          {"kernel", kernel},
          {"section", section ? nlohmann::json(*section) : nlohmann::json()},
          {"section_line", section_line ? nlohmann::json(*section_line) : nlohmann::json()},
          {"desc", desc},
          {"hint", hint}};
}

std::optional<KernelSurvivor> KernelSurvivor::from_json(const nlohmann::json& j) {
  // The same fields report_fields.txt declares for kernel_battery.survived[].
  if (!j.is_object()) return std::nullopt;
  auto text = [&](const char* k) { return j.contains(k) && j[k].is_string(); };
  auto maybe = [&](const char* k, bool (nlohmann::json::*is)() const noexcept) {
    return j.contains(k) && (j[k].is_null() || (j[k].*is)());
  };
  for (const char* k : {"mutant", "op", "kernel", "desc", "hint"})
    if (!text(k)) return std::nullopt;
  if (!maybe("section", &nlohmann::json::is_string) ||
      !maybe("section_line", &nlohmann::json::is_number_integer))
    return std::nullopt;
  KernelSurvivor s;
  s.mutant = j["mutant"].get<std::string>();
  s.op = j["op"].get<std::string>();
  s.kernel = j["kernel"].get<std::string>();
  s.section = opt_str(j, "section");
  s.section_line = opt_int(j, "section_line");
  s.desc = j["desc"].get<std::string>();
  s.hint = j["hint"].get<std::string>();
  return s;
}

int harness_report_version() {
  return schema().version;
}

std::int64_t HarnessReport::Triton::total_launches() const {
  std::int64_t n = 0;
  for (const auto& [k, v] : launches) n += v;
  return n;
}

const HarnessReport::Origin::Check* HarnessReport::Origin::host_check() const {
  if (!host) return nullptr;
  for (const auto& c : checked)
    if (c.on == *host) return &c;
  return nullptr;
}

Result<HarnessReport> parse_harness_report(const nlohmann::json& report, ReportOrigin origin) {
  if (!report.is_object()) return fail("parse", "harness report: not a JSON object");
  if (auto p = check_object(schema(), report, "", "", false, origin))
    return fail("parse", "harness report: field \"" + *p);
  int version = report.at("harness").get<int>();
  if (version != schema().version)
    return fail("parse", "harness report: field \"harness\" is version " + std::to_string(version) +
                             ", this kforge reads version " + std::to_string(schema().version) +
                             " (the harness and kforge were installed apart)");
  return read_checked(report);
}

Result<std::optional<HarnessReport>> parse_stored_report(const nlohmann::json& report) {
  if (!report.is_object() || !report.contains("harness")) return std::optional<HarnessReport>();
  KF_TRY(HarnessReport h, parse_harness_report(report, ReportOrigin::stored));
  return std::optional<HarnessReport>(std::move(h));
}

Result<WorkerEvent> parse_worker_event(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  auto bad = [](const std::string& why) { return fail("parse", "worker event: " + why); };
  if (!j.is_object()) return bad("not a JSON object: " + std::string(line.substr(0, 200)));
  auto name = j.find("event");
  if (name == j.end() || !name->is_string()) return bad("field \"event\" is missing or not text");
  std::string event = name->get<std::string>();
  const Schema& sch = event_schema();
  auto declared = std::find_if(sch.children.at("").begin(), sch.children.at("").end(),
                               [&](const Field* f) { return f->name == event; });
  auto kind = value_of(kWorkerEventNames, event);
  if (declared == sch.children.at("").end() || !kind)
    return bad("'" + event + "' is not an event of worker_events.txt (" +
               names_of(kWorkerEventNames) + ")");
  j.erase("event");
  if (auto p = check_object(sch, j, event, event, false, ReportOrigin::stored))
    return bad("field \"" + *p);
  WorkerEvent ev;
  ev.kind = *kind;
  if (auto pid = opt_int(j, "pid")) ev.pid = *pid;
  if (auto id = opt_int(j, "id")) ev.id = *id;
  if (const auto* m = child(j, "modules")) ev.modules = *m;
  if (const auto* p = child(j, "probe")) {
    ev.probe = *p;
    ev.probe_ok = p->at("ok").get<bool>();
  }
  if (const auto* k = child(j, "triton_key")) ev.triton_key = *k;
  if (auto st = opt_int(j, "status")) ev.status = static_cast<int>(*st);
  if (auto rss = opt_int(j, "maxrss_kb")) ev.maxrss_kb = *rss;
  if (auto cpu = opt_int(j, "cpu_ms")) ev.cpu_ms = *cpu;
  return ev;
}

Result<std::string> worker_op_text(const WorkerOp& op, std::size_t fds) {
  auto bad = [](const std::string& why) { return fail("parse", "worker message: " + why); };
  std::string name(name_of(kWorkerOpNames, op.kind));
  nlohmann::json msg = nlohmann::json::object();
  if (op.kind == WorkerOpKind::run) msg = {{"id", op.id}, {"request", op.file}};
  if (op.kind == WorkerOpKind::prepare) msg = {{"id", op.id}, {"prep", op.file}};
  const Schema& sch = op_schema();
  std::vector<const Field*> ops;  // the top-level entries that are messages, not `file`s
  for (const Field* f : sch.children.at(""))
    if (!sch.is_file(f->name)) ops.push_back(f);
  if (std::none_of(ops.begin(), ops.end(), [&](const Field* f) { return f->name == name; })) {
    std::string declared;
    for (const Field* f : ops) declared += (declared.empty() ? "" : ", ") + f->name;
    return bad("'" + name + "' is not an op of worker_ops.txt (" + declared + ")");
  }
  if (auto p = check_object(sch, msg, name, name, false, ReportOrigin::stored))
    return bad("field \"" + *p);
  if (fds != sch.fds.at(name))
    return bad(name + " came with " + std::to_string(fds) + " file descriptors, declared " +
               std::to_string(sch.fds.at(name)));
  msg["op"] = name;
  return msg.dump();
}

Result<std::string> worker_file_text(WorkerFile file, const nlohmann::json& content) {
  std::string name(name_of(kWorkerFileNames, file));
  const Schema& sch = op_schema();
  auto decl = std::find_if(sch.fields.begin(), sch.fields.end(),
                           [&](const Field& f) { return f.path == name; });
  if (decl == sch.fields.end() || !sch.is_file(name))
    return fail("parse", "worker file: '" + name + "' is not a `file` of worker_ops.txt");
  if (auto p = check_value(sch, content, decl->type, name, name, ReportOrigin::stored))
    return fail("parse", "worker file: field \"" + *p);
  return content.dump();
}

}  // namespace kforge::verify
