package dev.layover.spring.boot.console;

import dev.layover.console.ConsoleOptions;
import dev.layover.console.ConsoleServlet;
import dev.layover.core.Layover;
import dev.layover.spring.boot.InvalidLayoverPropertyException;
import dev.layover.spring.boot.LayoverAutoConfiguration;
import dev.layover.spring.boot.LayoverProperties;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ClassUtils;

/**
 * The replay console mounted inside the application ({@code layover.console.enabled=true},
 * {@code layover.console.mode=servlet}, the default), with layover-replay-console on the
 * classpath of a servlet web application: a servlet at {@code layover.console.path} (default
 * {@code /layover}) on the application's own port, behind the application's own security. The
 * console asks for no token of its own; the operator written to the audit log is the request's
 * remote user ({@code HttpServletRequest#getRemoteUser()}, set by Spring Security).
 *
 * <p>Secure by default:
 *
 * <ul>
 *   <li>the application fails to start ({@link InvalidLayoverPropertyException} naming
 *       {@code layover.console.allow-anonymous}) when it has no Spring Security
 *       {@code SecurityFilterChain} bean (or no Spring Security at all), unless
 *       {@code layover.console.allow-anonymous=true} says that is meant;
 *   <li>the servlet itself refuses (401) a request without a signed-in user (Spring Security's
 *       anonymous user counts as none), so a filter chain that lets the path through does not
 *       open it, unless {@code allow-anonymous} is set; such requests then read only, unless
 *       {@code layover.console.read-only=false} is set explicitly;
 *   <li>start-up logs where the console is and who can reach it: WARN without authentication,
 *       INFO behind Spring Security.
 * </ul>
 *
 * <table>
 *   <caption>Who may do what, by property</caption>
 *   <tr><th>{@code allow-anonymous}</th><th>{@code read-only}</th><th>signed-in user</th><th>no user</th></tr>
 *   <tr><td>false (default)</td><td>unset or false</td><td>read and act</td><td>401</td></tr>
 *   <tr><td>false</td><td>true</td><td>read</td><td>401</td></tr>
 *   <tr><td>true</td><td>unset</td><td>read and act</td><td>read</td></tr>
 *   <tr><td>true</td><td>false</td><td>read and act</td><td>read and act</td></tr>
 *   <tr><td>true</td><td>true</td><td>read</td><td>read</td></tr>
 * </table>
 */
@AutoConfiguration(after = LayoverAutoConfiguration.class)
@ConditionalOnClass(name = {"dev.layover.console.ConsoleServlet", "jakarta.servlet.http.HttpServlet"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBean(Layover.class)
@ConditionalOnProperty(prefix = "layover.console", name = "enabled", havingValue = "true")
public class LayoverConsoleServletAutoConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(LayoverConsoleServletAutoConfiguration.class);
    private static final Pattern PATH = Pattern.compile("(/[A-Za-z0-9._~-]+)+");
    private static final String SECURITY_FILTER_CHAIN = "org.springframework.security.web.SecurityFilterChain";

    /**
     * @param layover the application's instance
     * @param properties {@code layover.console.*}
     * @param context the application, asked whether Spring Security guards it
     * @return the servlet's registration at {@code layover.console.path/*}
     * @throws InvalidLayoverPropertyException for a bad path, or when nothing would authenticate the
     *     console's requests and {@code allow-anonymous} is not set
     */
    @Bean
    @ConditionalOnMissingBean(name = "layoverConsoleServlet")
    @ConditionalOnProperty(prefix = "layover.console", name = "mode", havingValue = "servlet", matchIfMissing = true)
    public ServletRegistrationBean<ConsoleServlet> layoverConsoleServlet(Layover layover, LayoverProperties properties,
            ApplicationContext context) {
        LayoverProperties.Console p = properties.getConsole();
        String path = p.getPath() == null ? "" : p.getPath().strip();
        if (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        if (!PATH.matcher(path).matches()) {
            throw new InvalidLayoverPropertyException("layover.console.path", new IllegalArgumentException(
                    "the console's path must be like /layover or /ops/layover (letters, digits, . _ ~ -), was '"
                            + p.getPath() + "'"));
        }
        boolean secured = springSecurity(context);
        if (!secured && !p.isAllowAnonymous()) {
            throw new InvalidLayoverPropertyException("layover.console.allow-anonymous", new IllegalStateException(
                    "the console would be mounted at " + path + " on the application's port with no authentication: "
                            + "the application has no Spring Security SecurityFilterChain"),
                    "Put the console behind a login: add spring-boot-starter-security with a SecurityFilterChain "
                            + "that authenticates " + path + "/**. Or serve it on its own loopback port with its own "
                            + "token: layover.console.mode=standalone. Or, if something else authenticates in front "
                            + "of the application, set layover.console.allow-anonymous=true: requests without a "
                            + "signed-in user may then read the console (read-only unless "
                            + "layover.console.read-only=false).");
        }
        Boolean readOnly = p.getReadOnly();
        ConsoleOptions options = ConsoleOptions.defaults().withExternalAuthentication(true)
                .withReadOnly(Boolean.TRUE.equals(readOnly))
                .withAnonymousAccess(p.isAllowAnonymous())
                .withAnonymousWrites(p.isAllowAnonymous() && Boolean.FALSE.equals(readOnly));
        log(path, secured, options);
        ServletRegistrationBean<ConsoleServlet> registration =
                new ServletRegistrationBean<>(ConsoleServlet.create(layover, options), path + "/*");
        registration.setName("layoverConsole");
        registration.setLoadOnStartup(1);
        return registration;
    }

    /** Whether the application has a Spring Security filter chain (its own, or Boot's default). */
    private static boolean springSecurity(ApplicationContext context) {
        ClassLoader loader = context.getClassLoader();
        if (!ClassUtils.isPresent(SECURITY_FILTER_CHAIN, loader)) {
            return false;
        }
        return context.getBeanNamesForType(ClassUtils.resolveClassName(SECURITY_FILTER_CHAIN, loader), true, false)
                .length > 0;
    }

    private static void log(String path, boolean secured, ConsoleOptions o) {
        String anonymous = o.readOnly() || !o.anonymousWrites() ? "read it (read-only)"
                : "read it and act on it (replay, discard, force breakers: layover.console.read-only=false)";
        String users = o.readOnly() ? "read it (read-only)" : "read it and act on it";
        if (!secured) {
            LOG.warn("Layover console mounted at {} on the application's port WITHOUT authentication: anyone who "
                    + "reaches this port can {} (layover.console.allow-anonymous=true)", path, anonymous);
        } else if (o.anonymousAccess()) {
            LOG.warn("Layover console mounted at {} on the application's port, behind Spring Security: its signed-in "
                    + "users can {}; requests it lets through without a user can {} "
                    + "(layover.console.allow-anonymous=true)", path, users, anonymous);
        } else {
            LOG.info("Layover console mounted at {} on the application's port, behind Spring Security: its signed-in "
                    + "users can {}; requests without a signed-in user are refused (401)", path, users);
        }
    }
}
