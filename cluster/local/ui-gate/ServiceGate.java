// A servlet filter for Spark's own web UIs (spark.ui.filters): every request must carry the
// secret header that only the service's proxy sends, else 403. Local mode puts it on the
// History Server, which listens on loopback where every driver could reach it otherwise
// (docs/security.md, "The History Server"). The secret comes from the JVM's environment, never
// from its command line. SERVLET_PACKAGE is javax.servlet for Spark 3, jakarta.servlet for
// Spark 4: cluster/local/ui-gate.ts writes the one this Spark's jars hold, then compiles it.
package submissionservice;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import SERVLET_PACKAGE.Filter;
import SERVLET_PACKAGE.FilterChain;
import SERVLET_PACKAGE.FilterConfig;
import SERVLET_PACKAGE.ServletException;
import SERVLET_PACKAGE.ServletRequest;
import SERVLET_PACKAGE.ServletResponse;
import SERVLET_PACKAGE.http.HttpServletRequest;
import SERVLET_PACKAGE.http.HttpServletResponse;

public final class ServiceGate implements Filter {
  /** The header the service's proxy sends (cluster/local/ui-gate.ts, UI_GATE_HEADER). */
  static final String HEADER = "X-Submission-Service-Gate";
  /** The environment variable holding the secret (UI_GATE_ENV). */
  static final String ENV = "SUBMISSION_SERVICE_UI_GATE";

  private byte[] secret;

  @Override
  public void init(FilterConfig config) throws ServletException {
    String value = System.getenv(ENV);
    // No secret: nothing may pass, rather than everything.
    if (value == null || value.length() < 32) throw new ServletException(ENV + " is not set: the UI stays closed");
    secret = value.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
    String given = ((HttpServletRequest) request).getHeader(HEADER);
    if (secret != null && given != null && MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), secret)) {
      chain.doFilter(request, response);
      return;
    }
    ((HttpServletResponse) response).sendError(HttpServletResponse.SC_FORBIDDEN, "Only the submission service may open this UI.");
  }

  @Override
  public void destroy() {
    secret = null;
  }
}
