// GPU detection against a fake machine (the smi tools and /dev are the outside world).

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kforge/verify/gpu.hpp"

namespace kforge::verify {
namespace {

class FakeProbe final : public SystemProbe {
 public:
  std::map<std::string, Result<std::string>> commands;  // by argv[0]
  std::map<std::string, std::vector<std::string>> dirs;
  std::set<std::string> files;
  std::vector<std::string> ran;

  Result<std::string> run(const std::vector<std::string>& argv) override {
    ran.push_back(argv.at(0));
    auto it = commands.find(argv.at(0));
    if (it == commands.end()) return fail("not_found", argv[0] + ": not found");
    return it->second;
  }
  std::vector<std::string> list_dir(const std::string& path) override {
    auto it = dirs.find(path);
    return it == dirs.end() ? std::vector<std::string>{} : it->second;
  }
  bool exists(const std::string& path) override { return files.count(path) > 0; }
};

const char* kRocmSmi = R"({
  "card0": {"Card Series": "AMD Instinct MI300X", "Unique ID": "0x9f1c2a"},
  "card1": {"Card Series": "AMD Instinct MI300X", "Unique ID": "0x77aa01"},
  "card2": {"Card Series": "AMD Instinct MI300X", "Unique ID": "N/A"},
  "system": {"Driver version": "6.8"}
})";

TEST(VerifyGpuDetect, AmdThroughRocmSmi) {
  FakeProbe p;
  p.files = {"/dev/kfd"};
  p.commands.emplace("rocm-smi", std::string(kRocmSmi));
  auto det = detect_devices(p);
  ASSERT_EQ(det.devices.size(), 3u);
  EXPECT_EQ(det.devices[0].id, "rocm:0");
  EXPECT_EQ(det.devices[2].visibility_env().at("ROCR_VISIBLE_DEVICES"), "2");  // no usable id
  EXPECT_EQ(det.devices[1].name, "AMD Instinct MI300X");
  auto env = det.devices[1].visibility_env();
  EXPECT_EQ(env.at("ROCR_VISIBLE_DEVICES"), "GPU-000000000077aa01");
  EXPECT_EQ(env.at("HIP_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST(VerifyGpuDetect, AmdFallsBackToDeviceFilesWhenRocmSmiMisbehaves) {
  FakeProbe p;
  p.files = {"/dev/kfd"};
  p.commands.emplace("rocm-smi", std::string("WARNING: no JSON for you\n{garbage"));
  p.dirs["/dev/dri"] = {"card0", "card1", "renderD128", "renderD129", "renderD130"};
  auto det = detect_devices(p);
  ASSERT_EQ(det.devices.size(), 3u);
  EXPECT_EQ(det.devices[2].id, "rocm:2");
  EXPECT_EQ(det.devices[2].visibility_env().at("ROCR_VISIBLE_DEVICES"), "2");
  bool noted = false;
  for (const auto& n : det.notes) noted = noted || n.find("/dev/kfd") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(VerifyGpuDetect, NvidiaThroughNvidiaSmi) {
  FakeProbe p;
  p.commands.emplace("nvidia-smi", std::string("1, GPU-bbbb, NVIDIA H100 80GB HBM3\n"
                                               "0, GPU-aaaa, NVIDIA H100 80GB HBM3\n"));
  auto det = detect_devices(p);
  ASSERT_EQ(det.devices.size(), 2u);
  EXPECT_EQ(det.devices[0].id, "cuda:0");
  EXPECT_EQ(det.devices[0].visibility_env().at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
  EXPECT_EQ(det.devices[1].name, "NVIDIA H100 80GB HBM3");
}

TEST(VerifyGpuDetect, NvidiaFallsBackToDeviceFiles) {
  FakeProbe p;
  p.commands.emplace("nvidia-smi",
                     Result<std::string>(fail("io", "nvidia-smi: exited with status 9")));
  p.dirs["/dev"] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"};
  auto det = detect_devices(p);
  ASSERT_EQ(det.devices.size(), 2u);
  auto env = det.devices[1].visibility_env();
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(env.at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
}

TEST(VerifyGpuDetect, NothingFoundMeansCpu) {
  FakeProbe p;
  auto devs = resolve_devices({}, p);
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 1u);
  EXPECT_EQ((*devs)[0].id, "cpu");
  EXPECT_EQ((*devs)[0].visibility_env().at("CUDA_VISIBLE_DEVICES"), "");
}

TEST(VerifyGpuDetect, ConfiguredDevicesAreCheckedAndNamed) {
  FakeProbe p;
  p.commands.emplace("nvidia-smi", std::string("0, GPU-aaaa, NVIDIA H200\n"));
  auto devs = resolve_devices({"cuda:0", "cuda:3"}, p);
  ASSERT_TRUE(devs.ok());
  EXPECT_EQ((*devs)[0].name, "NVIDIA H200");
  EXPECT_EQ((*devs)[1].visibility_env().at("CUDA_VISIBLE_DEVICES"), "3");
  auto bad = resolve_devices({"cuda:x"}, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'cuda:x'"), std::string::npos);
  auto twice = resolve_devices({"cpu", "cpu"}, p);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace kforge::verify
