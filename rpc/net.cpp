// Addresses, token, credentials and channels of the device pool.
#include "rpc/net.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace kiln::rpc {

namespace {

constexpr const char* kTokenKey = "x-kiln-token";

// Compares without an early exit, so the time taken does not tell how much
// of a guessed token was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

std::string check_address(const std::string& address, const std::string& what, bool allow_port0) {
  const std::string expect = " (expected HOST:PORT, e.g. 127.0.0.1:9190)";
  const size_t colon = address.rfind(':');
  user_check(!address.empty() && colon != std::string::npos && colon > 0 && colon + 1 < address.size())
      << what << " '" << address << "' is not an address" << expect;
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.front() == '[') {
    user_check(host.size() > 2 && host.back() == ']')
        << what << " '" << address << "' has a malformed IPv6 host" << expect;
  } else {
    user_check(host.find(':') == std::string::npos)
        << what << " '" << address << "': write an IPv6 host in brackets, e.g. [::1]:9190";
    for (char c : host)
      user_check(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')
          << what << " '" << address << "' has an invalid host name '" << host << "'" << expect;
  }
  user_check(port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos)
      << what << " '" << address << "' has an invalid port '" << port << "'" << expect;
  const int p = std::stoi(port);
  user_check(p <= 65535) << what << " '" << address << "': port " << p << " is out of range (0-65535)";
  user_check(p > 0 || allow_port0) << what << " '" << address << "': port 0 is not an address to connect to";
  return address;
}

std::string address_host(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

bool is_wildcard_host(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty();
}

std::string join_host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  user_check(in.good()) << "cannot read " << what << " '" << path << "': " << std::strerror(errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const Security& security) {
  user_check(security.tls_cert.empty() == security.tls_key.empty())
      << "TLS needs both --tls-cert and --tls-key (got only "
      << (security.tls_cert.empty() ? "--tls-key" : "--tls-cert") << ")";
  if (security.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  pair.cert_chain = read_file(security.tls_cert, "the TLS certificate");
  pair.private_key = read_file(security.tls_key, "the TLS key");
  user_check(pair.cert_chain.find("-----BEGIN CERTIFICATE-----") != std::string::npos)
      << "the TLS certificate '" << security.tls_cert << "' is not a PEM certificate";
  user_check(pair.private_key.find("PRIVATE KEY-----") != std::string::npos)
      << "the TLS key '" << security.tls_key << "' is not a PEM private key";
  options.pem_key_cert_pairs.push_back(pair);
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address, const Security& security,
                                            int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // Reconnect quickly after a peer restarts (the default backoff grows to
  // two minutes, longer than a tuning job should wait for a tracker).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (security.tls_ca.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = read_file(security.tls_ca, "the TLS CA certificate");
    user_check(options.pem_root_certs.find("-----BEGIN CERTIFICATE-----") != std::string::npos)
        << "the TLS CA certificate '" << security.tls_ca << "' is not a PEM certificate";
    creds = grpc::SslCredentials(options);
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

void prepare_context(grpc::ClientContext& context, const std::string& token, double seconds) {
  if (!token.empty()) context.AddMetadata(kTokenKey, token);
  context.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
}

grpc::Status check_token(const grpc::ServerContext& context, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find(kTokenKey);
  if (it == md.end())
    return {grpc::StatusCode::UNAUTHENTICATED, "this kiln pool requires a token (--token or KILN_TOKEN)"};
  if (!same_secret(std::string(it->second.data(), it->second.size()), token))
    return {grpc::StatusCode::UNAUTHENTICATED, "wrong token for this kiln pool"};
  return grpc::Status::OK;
}

std::string describe(const grpc::Status& status) {
  static const char* names[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  std::string s = code >= 0 && code <= 16 ? names[code] : "status " + std::to_string(code);
  if (!status.error_message().empty()) s += ": " + status.error_message();
  return s;
}

bool is_transport_failure(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::DATA_LOSS:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::rpc
