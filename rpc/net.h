// What every piece of the device pool shares: checking HOST:PORT addresses,
// the pool's token (metadata "x-kiln-token", checked on every call of both
// services), optional TLS credentials, channels and deadlines.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace kiln::rpc {

// The pool's shared secret and optional TLS: servers use cert + key, clients
// verify the servers with ca. Empty strings: no token, no TLS.
struct Security {
  std::string token;
  std::string tls_cert;  // PEM file of the server's certificate
  std::string tls_key;   // PEM file of its private key
  std::string tls_ca;    // PEM file of the CA clients trust (the self-signed cert itself works)
};

// Default limit of one gRPC message; measure requests carry a whole artifact.
constexpr int kDefaultMaxMessageBytes = 96 << 20;

// Checks "HOST:PORT" ("[v6]:PORT" too); user_error naming `what` (e.g.
// "--tracker") otherwise. Port 0 (pick a free one) only when allow_port0.
// Returns the address unchanged.
std::string check_address(const std::string& address, const std::string& what, bool allow_port0);
// The host part of a checked address ("[::1]" -> "::1").
std::string address_host(const std::string& address);
// Whether the host part is a wildcard (0.0.0.0, ::, [::]).
bool is_wildcard_host(const std::string& host);
// Joins host and port, bracketing IPv6 hosts.
std::string join_host_port(const std::string& host, int port);

// Server credentials: TLS when cert and key are set (user_error when only
// one is, or a file cannot be read), else insecure.
std::shared_ptr<grpc::ServerCredentials> server_credentials(const Security& security);
// A channel to `address`: TLS verified against tls_ca when set, else
// insecure. Messages up to max_message_bytes in both directions.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address, const Security& security,
                                            int max_message_bytes = kDefaultMaxMessageBytes);

// Client side: the token (when there is one) and a deadline `seconds` away.
void prepare_context(grpc::ClientContext& context, const std::string& token, double seconds);
// Server side: OK when the call carries the right token (or the pool has
// none), else UNAUTHENTICATED.
grpc::Status check_token(const grpc::ServerContext& context, const std::string& token);

// "UNAVAILABLE: failed to connect to all addresses" for messages.
std::string describe(const grpc::Status& status);
// Whether a failed call means the peer is gone or unreachable (retry
// elsewhere) rather than that it refused the request.
bool is_transport_failure(const grpc::Status& status);

// Reads a whole file; user_error naming `what` when it cannot.
std::string read_file(const std::string& path, const std::string& what);

}  // namespace kiln::rpc
