// The device pool without networking: the tracker's scheduling (priority,
// then first come first served), expiry of silent devices, stale leases and
// requests, re-registration; request validation (malformed and oversized
// measure requests); task <-> request conversions; address checks.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "base/error.h"
#include "rpc/client/measure_spec.h"
#include "rpc/device_target.h"
#include "rpc/measure_request.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_artifact.h"
#include "support/temp_dir.h"
#include "rpc/net.h"
#include "rpc/tracker_state.h"

namespace kiln::rpc {
namespace {

DeviceInfo device(const std::string& key, const std::string& address) {
  DeviceInfo d;
  d.set_key(key);
  d.set_target("llvm");
  d.set_address(address);
  return d;
}

LeaseRequest request(const std::string& key, int priority, const std::string& job, int max_devices = 0) {
  LeaseRequest r;
  r.set_key(key);
  r.set_priority(priority);
  r.set_job(job);
  r.set_max_devices(max_devices);
  return r;
}

std::vector<std::string> lease_ids(const LeaseReply& r) {
  std::vector<std::string> ids;
  for (const auto& l : r.leases()) ids.push_back(l.lease_id());
  return ids;
}

TrackerOptions fast_options() {
  TrackerOptions o;
  o.heartbeat_interval_s = 1;
  o.heartbeat_timeout_s = 5;
  o.lease_timeout_s = 15;
  o.max_wait_s = 5;
  return o;
}

}  // namespace

TEST_CASE("tracker grants by priority, then first come first served", "[rpc][tracker]") {
  TrackerState t(fast_options());
  t.register_device(device("cpu", "h:1"), 0);
  t.register_device(device("cpu", "h:2"), 0);
  t.register_device(device("gpu", "h:3"), 0);

  // Job A takes both cpu devices.
  const std::string a = t.enqueue(request("cpu", 0, "A"), 1);
  LeaseReply ra;
  REQUIRE(t.take_grant(a, &ra));
  CHECK(ra.leases_size() == 2);
  for (const auto& l : ra.leases()) CHECK(l.device().key() == "cpu");

  // While A holds them: B (priority 0), then C (priority 0), then D
  // (priority 5) queue up; a gpu request is independent.
  const std::string b = t.enqueue(request("cpu", 0, "B"), 2);
  const std::string c = t.enqueue(request("cpu", 0, "C", 1), 3);
  const std::string d = t.enqueue(request("cpu", 5, "D", 1), 4);
  const std::string g = t.enqueue(request("gpu", 0, "G"), 4);
  LeaseReply rb, rc, rd, rg;
  CHECK_FALSE(t.take_grant(b, &rb));
  CHECK(rb.queue_position() == 2);  // D, with the higher priority, is first
  CHECK_FALSE(t.take_grant(d, &rd));
  CHECK(rd.queue_position() == 1);
  REQUIRE(t.take_grant(g, &rg));
  CHECK(rg.leases_size() == 1);
  StatusReply s = t.status(5);
  REQUIRE(s.queue_size() == 3);
  CHECK(s.queue(0).job() == "D");
  CHECK(s.queue(1).job() == "B");
  CHECK(s.queue(2).job() == "C");

  // A releases: D (higher priority) gets one device, B (first come) the other.
  t.release(lease_ids(ra), "", 5);
  REQUIRE(t.take_grant(d, &rd));
  CHECK(rd.leases_size() == 1);
  REQUIRE(t.take_grant(b, &rb));
  CHECK(rb.leases_size() == 1);
  CHECK_FALSE(t.take_grant(c, &rc));
  // B is done: C gets its device.
  t.release(lease_ids(rb), "", 6);
  REQUIRE(t.take_grant(c, &rc));
  CHECK(rc.leases_size() == 1);
  CHECK(t.num_requests() == 0);
}

TEST_CASE("tracker drops silent devices, reclaims stale leases and requests", "[rpc][tracker]") {
  TrackerState t(fast_options());
  const std::string d1 = t.register_device(device("cpu", "h:1"), 0);
  const std::string d2 = t.register_device(device("cpu", "h:2"), 0);
  const std::string r = t.enqueue(request("cpu", 0, "A"), 0);
  LeaseReply grant;
  REQUIRE(t.take_grant(r, &grant));
  REQUIRE(grant.leases_size() == 2);
  const std::vector<std::string> ids = lease_ids(grant);

  // d1 keeps heartbeating, d2 falls silent: after the timeout d2 and its
  // lease are gone, and renewing reports that lease lost.
  for (double now = 1; now <= 6; now += 1) {
    CHECK(t.heartbeat(d1, now));
    t.expire(now);
    CHECK(t.renew(ids, "", now).size() == (now <= 5 ? 0u : 1u));
  }
  CHECK(t.num_devices() == 1);
  CHECK_FALSE(t.heartbeat(d2, 6));  // the server registers again on this answer
  const auto lost = t.renew(ids, "", 6.5);
  REQUIRE(lost.size() == 1);
  CHECK(t.num_leases() == 1);

  // A lease that is not renewed within the lease timeout is reclaimed, and
  // the device goes to the next request.
  const std::string b = t.enqueue(request("cpu", 0, "B"), 7);
  for (double now = 7; now <= 22; now += 1) {
    t.heartbeat(d1, now);
    t.renew({}, b, now);  // B keeps polling; A stopped renewing at 6
    t.expire(now);
  }
  LeaseReply rb;
  REQUIRE(t.take_grant(b, &rb));
  CHECK(rb.leases(0).device_id() == d1);
  CHECK(t.renew(ids, "", 22).size() == 2);

  // A request whose job stopped polling is withdrawn.
  const std::string c = t.enqueue(request("cpu", 0, "C"), 22);
  CHECK(t.num_requests() == 1);
  for (double now = 23; now <= 40; now += 1) {
    t.heartbeat(d1, now);
    t.renew(lease_ids(rb), "", now);
    t.expire(now);
  }
  CHECK(t.num_requests() == 0);
  (void)c;
}

TEST_CASE("tracker: a restarted server replaces its old entry, a new tracker knows nobody", "[rpc][tracker]") {
  TrackerState t(fast_options());
  const std::string old_id = t.register_device(device("cpu", "h:1"), 0);
  const std::string r = t.enqueue(request("cpu", 0, "A"), 0);
  LeaseReply grant;
  REQUIRE(t.take_grant(r, &grant));
  const std::string new_id = t.register_device(device("cpu", "h:1"), 1);
  CHECK(new_id != old_id);
  CHECK(t.num_devices() == 1);
  CHECK(t.renew(lease_ids(grant), "", 1).size() == 1);  // the old lease died with the old entry
  CHECK_FALSE(t.heartbeat(old_id, 1));

  TrackerState restarted(fast_options());
  CHECK_FALSE(restarted.heartbeat(new_id, 2));  // NOT_FOUND: the server registers again
  CHECK(restarted.register_device(device("cpu", "h:1"), 2) != new_id);
  CHECK(restarted.has_key("cpu"));
  CHECK_FALSE(restarted.has_key("gpu"));
}

TEST_CASE("tracker options must make sense", "[rpc][tracker]") {
  TrackerOptions o = fast_options();
  o.heartbeat_timeout_s = 0.5;
  CHECK_THROWS_WITH(TrackerState(o), Catch::Contains("must be longer than the heartbeat interval"));
  o = fast_options();
  o.lease_timeout_s = 2;
  CHECK_THROWS_WITH(TrackerState(o), Catch::Contains("must be longer than the longest lease wait"));
}

TEST_CASE("measure requests: malformed and oversized ones are refused with a reason", "[rpc][validate]") {
  // A minimal valid request for this machine.
  MeasureRequest ok;
  std::string elf(64, '\0');
  elf[0] = 0x7f;
  elf[1] = 'E';
  elf[2] = 'L';
  elf[3] = 'F';
  elf[4] = 2;
  elf[16] = 3;  // ET_DYN
  const int machine = host_elf_machine();
  REQUIRE(machine > 0);
  elf[18] = static_cast<char>(machine & 0xff);
  elf[19] = static_cast<char>(machine >> 8);
  ok.set_artifact(elf);
  ok.set_entry("kiln_matmul");
  for (const char* name : {"A", "C"}) {
    BufferSpec* b = ok.add_args();
    b->set_name(name);
    b->set_dtype("f32");
    b->add_shape(4);
    b->add_shape(4);
  }
  ok.set_num_inputs(1);
  ReferenceSpec* ref = ok.add_reference();
  ref->add_flat_index(15);
  ref->add_expected(1.0);
  ref->set_tolerance(1e-5);
  ok.mutable_options()->set_repeat(1);
  ok.mutable_options()->set_run_timeout_s(1);
  RequestLimits limits;
  limits.max_artifact_bytes = 1000;
  limits.max_buffer_bytes = 1 << 20;
  REQUIRE(validate_request(ok, limits, machine).ok());

  auto refused = [&](const std::function<void(MeasureRequest&)>& spoil, grpc::StatusCode code, const std::string& why) {
    MeasureRequest r = ok;
    spoil(r);
    const grpc::Status s = validate_request(r, limits, machine);
    CHECK(s.error_code() == code);
    CHECK_THAT(s.error_message(), Catch::Contains(why));
  };
  const auto invalid = grpc::StatusCode::INVALID_ARGUMENT;
  const auto exhausted = grpc::StatusCode::RESOURCE_EXHAUSTED;
  refused([](MeasureRequest& r) { r.set_artifact("not a shared object at all"); }, invalid, "not an ELF shared object");
  refused([](MeasureRequest& r) { r.mutable_artifact()->at(16) = 1; }, invalid, "not a shared object");
  refused(
      [](MeasureRequest& r) { r.mutable_artifact()->at(18) = static_cast<char>(183 == host_elf_machine() ? 62 : 183); },
      invalid, "this device runs");
  refused([](MeasureRequest& r) { r.mutable_artifact()->resize(1001, 'x'); }, exhausted,
          "over this device's limit of 1000");
  refused([](MeasureRequest& r) { r.clear_entry(); }, invalid, "no kernel entry point");
  refused([](MeasureRequest& r) { r.set_num_inputs(2); }, invalid, "leaves no output");
  refused([](MeasureRequest& r) { r.mutable_args(0)->set_dtype("complex"); }, invalid, "argument 'A'");
  refused([](MeasureRequest& r) { r.mutable_args(0)->set_shape(0, -3); }, invalid, "non-positive extent -3");
  refused([](MeasureRequest& r) { r.mutable_args(1)->set_shape(0, 1 << 20); }, exhausted,
          "the kernel's arguments take");
  refused([](MeasureRequest& r) { r.mutable_reference(0)->set_output(1); }, invalid, "output 1, which does not exist");
  refused([](MeasureRequest& r) { r.mutable_reference(0)->set_flat_index(0, 16); }, invalid,
          "index 16 is out of range");
  refused([](MeasureRequest& r) { r.mutable_reference(0)->add_expected(2); }, invalid, "1 indices but 2 values");
  refused([](MeasureRequest& r) { r.mutable_reference(0)->clear_flat_index(); }, invalid,
          "a whole-output reference has 1 values for an output of 16 elements");
  {
    MeasureRequest whole = ok;  // the whole output: every element, no indices
    whole.mutable_reference(0)->clear_flat_index();
    whole.mutable_reference(0)->clear_expected();
    for (int k = 0; k < 16; ++k) whole.mutable_reference(0)->add_expected(k);
    CHECK(validate_request(whole, limits, machine).ok());
    limits.max_reference_points = 15;
    CHECK(validate_request(whole, limits, machine).error_code() == exhausted);
    limits.max_reference_points = size_t{1} << 23;
  }
  refused([](MeasureRequest& r) { r.mutable_options()->set_repeat(0); }, invalid, "repeat must be");
  refused([](MeasureRequest& r) { r.mutable_options()->set_run_timeout_s(0); }, invalid, "run timeout");
  refused([](MeasureRequest& r) { r.set_screen_ms(-1); }, invalid, "screen_ms must be >= 0");
  refused([](MeasureRequest& r) { r.set_screen_ms(std::nan("")); }, invalid, "screen_ms must be >= 0");

  // A GPU device (elf_machine 0) takes kiln GPU artifacts only.
  {
    const grpc::Status s = validate_request(ok, limits, 0);
    CHECK(s.error_code() == invalid);
    CHECK_THAT(s.error_message(), Catch::Contains("not a kiln GPU artifact (this device measures on a GPU"));
    MeasureRequest gpu = ok;
    kiln::testing::TempDir dir("kiln_gpu_artifact");
    GpuArtifact a;
    a.arch = "sm_90";
    a.kernels.push_back(GpuArtifactKernel{"k0", {{4, 1, 1}}, {{32, 1, 1}}, 0, {0, 1}});
    a.image = {'c', 'u', 'b', 'i', 'n'};
    write_gpu_artifact(a, dir.path + "/a.kgpu");
    std::ifstream in(dir.path + "/a.kgpu", std::ios::binary);
    gpu.set_artifact(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    CHECK(validate_request(gpu, limits, 0).ok());
    const GpuArtifact back = read_gpu_artifact(dir.path + "/a.kgpu");
    CHECK(back.arch == "sm_90");
    CHECK(back.kernels.at(0).name == "k0");
    CHECK(back.kernels.at(0).grid[0] == 4);
    CHECK(back.kernels.at(0).arg_indices == std::vector<int>{0, 1});
    CHECK(std::string(back.image.begin(), back.image.end()) == "cubin");
    // ... and an ELF device refuses them.
    CHECK_THAT(validate_request(gpu, limits, machine).error_message(), Catch::Contains("not an ELF shared object"));
  }
}

TEST_CASE("a task survives the trip through a measure request", "[rpc][validate]") {
  Task task;
  task.args.push_back(BufferArg{Var::handle("A", DType::f32()), "A", DType::f32(), {3, 5}});
  task.args.push_back(BufferArg{Var::handle("C", DType::i8()), "C", DType::i8(), {7}});
  task.num_inputs = 1;
  task.input_seed = 42;
  ReferenceSample ref;
  ref.flat_index = {0, 6};
  ref.expected = {1.5, -2};
  ref.tolerance = 0.25;
  task.reference = {ref};
  kiln::MeasureOptions mo;
  mo.repeat = 4;
  mo.number = 2;
  mo.run_timeout_s = 3;
  const MeasureRequest r = measure_spec(task, mo);
  const kiln::MeasureJob back = job_of_request(r);
  REQUIRE(back.args.size() == 2);
  CHECK(back.args[0].shape == std::vector<int64_t>{3, 5});
  CHECK(back.args[1].dtype == kiln::rt::DataType::i8());
  CHECK(back.num_inputs == 1);
  CHECK(back.input_seed == 42);
  REQUIRE(back.reference.size() == 1);
  CHECK(back.reference[0].flat_index == ref.flat_index);
  CHECK(back.reference[0].expected == ref.expected);
  CHECK(back.reference[0].tolerance == 0.25);
  const kiln::MeasureOptions o = options_of_request(r);
  CHECK(o.repeat == 4);
  CHECK(o.number == 2);
  CHECK(o.run_timeout_s == 3);
  // The worker identity follows the buffers and checks, not the options.
  MeasureRequest r2 = r;
  r2.mutable_options()->set_repeat(9);
  CHECK(job_of_request(r2).identity == back.identity);
  r2.set_screen_ms(0.25);  // screening travels with each candidate
  CHECK(job_of_request(r2).identity == back.identity);
  CHECK(job_of_request(r2).screen_ms == 0.25);
  CHECK(back.screen_ms == 0);
  r2.set_input_seed(43);
  CHECK(job_of_request(r2).identity != back.identity);
  for (kiln::ErrorKind k : {kiln::ErrorKind::kNone, kiln::ErrorKind::kRuntimeCrash, kiln::ErrorKind::kWrongResult,
                            kiln::ErrorKind::kRuntimeTimeout, kiln::ErrorKind::kDeviceError})
    CHECK(from_proto(to_proto(k)) == k);
}

TEST_CASE("pool addresses are checked with clear messages", "[rpc][address]") {
  CHECK(check_address("127.0.0.1:9190", "--pool", false) == "127.0.0.1:9190");
  CHECK(check_address("[::1]:80", "--pool", false) == "[::1]:80");
  CHECK(check_address("0.0.0.0:0", "--listen", true) == "0.0.0.0:0");
  CHECK_THROWS_WITH(check_address("localhost", "--pool", false), Catch::Contains("'localhost' is not an address"));
  CHECK_THROWS_WITH(check_address("host:http", "--pool", false), Catch::Contains("invalid port 'http'"));
  CHECK_THROWS_WITH(check_address("host:70000", "--pool", false), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(check_address("host:0", "--pool", false), Catch::Contains("port 0 is not an address"));
  CHECK_THROWS_WITH(check_address("::1:80", "--pool", false), Catch::Contains("in brackets"));
  CHECK_THROWS_WITH(check_address("a b:80", "--pool", false), Catch::Contains("invalid host name"));
  CHECK(address_host("[::1]:80") == "::1");
  CHECK(join_host_port("::1", 80) == "[::1]:80");
  CHECK(join_host_port("10.0.0.1", 80) == "10.0.0.1:80");
}

}  // namespace kiln::rpc

namespace kiln::rpc {

TEST_CASE("a device server works out its target without the compiler", "[rpc][target]") {
  const std::string host = describe_host_target();
  CHECK_THAT(host, Catch::StartsWith("llvm -mtriple=" + host_triple_name() + " -mcpu=generic"));
  CHECK(device_target("") == host);
  // A target without a triple gets this machine's, so the tuner never reads
  // it as its own host.
  CHECK(device_target("llvm -mcpu=znver3") == "llvm -mtriple=" + host_triple_name() + " -mcpu=znver3");
  const std::string mine = "llvm -mtriple=" + host_triple_name() + " -mcpu=generic -mattr=+avx2";
  CHECK(device_target(mine) == mine);
  CHECK_THROWS_WITH(device_target("opencl"), Catch::Contains("target is an llvm target") &&
                                                Catch::Contains("or a cuda one"));
  // A cuda server measures on the first GPU: without one it does not start.
  if (!rt::cuda::available())
    CHECK_THROWS_WITH(device_target("cuda -arch=sm_90"), Catch::Contains("a cuda device server measures on a GPU"));
  const std::string other = host_triple_name().rfind("aarch64", 0) == 0 ? "x86_64-pc-linux-gnu" : "aarch64-linux-gnu";
  CHECK_THROWS_WITH(device_target("llvm -mtriple=" + other), Catch::Contains("does not run here"));
}

}  // namespace kiln::rpc
