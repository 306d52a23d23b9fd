// A gRPC interceptor for Spark 3.5's Connect server (spark.connect.grpc.interceptor.classes),
// which has no authentication of its own and listens on every interface: every call must carry
// `authorization: Bearer TOKEN`, the token only the service and this driver know (the same
// variable and header Spark 4's own check reads), else UNAUTHENTICATED before any of Spark's
// code sees the call. Without the variable every call is refused, rather than every call let
// through. Compiled by cluster/local/connect-gate.ts against the server's jar, whose gRPC is
// shaded under org.sparkproject.connect.grpc; Spark makes it through its no-argument constructor.
package submissionservice;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

public final class ConnectGate implements ServerInterceptor {
  /** The environment variable holding the token (connect-server-token.ts, CONNECT_SERVER_TOKEN_ENV). */
  static final String ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN";

  private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** `Bearer TOKEN` as bytes; null when the driver was given no token (every call is refused). */
  private final byte[] expected;

  public ConnectGate() {
    String token = System.getenv(ENV);
    expected = token == null || token.length() < 32 ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    String given = headers.get(AUTHORIZATION);
    // MessageDigest.isEqual takes the same time wherever the bytes differ.
    if (expected != null && given != null && MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected)) {
      return next.startCall(call, headers);
    }
    String why = expected == null ? "this Spark Connect server was started without its token: it answers no call" : "only the submission service's Spark Connect endpoint may call this server";
    call.close(Status.UNAUTHENTICATED.withDescription(why), new Metadata());
    return new ServerCall.Listener<ReqT>() {};
  }
}
