package dev.layover.console;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * An "application" on Jetty with the console servlet mounted at {@code /app/layover/*}, as a
 * Spring Boot app would mount it; optionally behind the application's own authentication (a
 * filter that lets in requests naming a known user in {@code X-Test-User} and sets
 * {@code getRemoteUser()}).
 */
final class MountedServer implements AutoCloseable {

    static final String USER_HEADER = "X-Test-User";

    private final Server server;
    private final ConsoleServlet servlet;

    MountedServer(ConsoleServlet servlet, boolean appAuthentication) throws Exception {
        this.servlet = servlet;
        server = new Server();
        ServerConnector c = new ServerConnector(server);
        c.setHost("127.0.0.1");
        c.setPort(0);
        server.addConnector(c);
        ServletContextHandler context = new ServletContextHandler("/app");
        context.addServlet(new ServletHolder(servlet), "/layover/*");
        if (appAuthentication) {
            context.addFilter(new FilterHolder(new AppSecurity()), "/*", EnumSet.of(DispatcherType.REQUEST));
        }
        server.setHandler(context);
        server.start();
    }

    /** @return the console's mount point, e.g. {@code http://127.0.0.1:41234/app/layover/} */
    URI url() {
        return URI.create("http://127.0.0.1:" + ((ServerConnector) server.getConnectors()[0]).getLocalPort()
                + "/app/layover/");
    }

    int port() {
        return ((ServerConnector) server.getConnectors()[0]).getLocalPort();
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            throw new IllegalStateException("stopping the test application's Jetty", e);
        } finally {
            servlet.destroy();
        }
    }

    /** The application's security: only users it knows, named by a header (a stand-in for a login). */
    private static final class AppSecurity implements Filter {
        @Override
        public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
                throws IOException, ServletException {
            HttpServletRequest req = (HttpServletRequest) request;
            String user = req.getHeader(USER_HEADER);
            if (user == null || !(user.equals("carol") || user.equals("dave"))) {
                ((HttpServletResponse) response).sendError(401, "log in to the application first");
                return;
            }
            chain.doFilter(new HttpServletRequestWrapper(req) {
                @Override
                public String getRemoteUser() {
                    return user;
                }
            }, response);
        }
    }
}
