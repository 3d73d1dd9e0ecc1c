package dev.layover.spring.boot.console;

import dev.layover.console.ConsoleOptions;
import dev.layover.console.ConsoleServlet;
import dev.layover.core.Layover;
import dev.layover.spring.boot.InvalidLayoverPropertyException;
import dev.layover.spring.boot.LayoverAutoConfiguration;
import dev.layover.spring.boot.LayoverProperties;
import java.util.regex.Pattern;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;

/**
 * The replay console mounted inside the application ({@code layover.console.enabled=true},
 * {@code layover.console.mode=servlet}, the default), with layover-replay-console on the
 * classpath of a servlet web application: a servlet at {@code layover.console.path} (default
 * {@code /layover}) in the application's own servlet container, so the application's own security
 * (a Spring Security filter chain, a gateway) decides who gets in. The console asks for no token
 * of its own; the operator written to the audit log is the request's remote user
 * ({@code HttpServletRequest#getRemoteUser()}, set by Spring Security).
 *
 * <p>Hazard: with no security in the application, anyone who reaches the application reaches the
 * console. Secure the path, or use {@code mode=standalone} (loopback and a token by default).
 */
@AutoConfiguration(after = LayoverAutoConfiguration.class)
@ConditionalOnClass(name = {"dev.layover.console.ConsoleServlet", "jakarta.servlet.http.HttpServlet"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBean(Layover.class)
@ConditionalOnProperty(prefix = "layover.console", name = "enabled", havingValue = "true")
public class LayoverConsoleServletAutoConfiguration {

    private static final Pattern PATH = Pattern.compile("(/[A-Za-z0-9._~-]+)+");

    /**
     * @param layover the application's instance
     * @param properties {@code layover.console.*}
     * @return the servlet's registration at {@code layover.console.path/*}
     */
    @Bean
    @ConditionalOnMissingBean(name = "layoverConsoleServlet")
    @ConditionalOnProperty(prefix = "layover.console", name = "mode", havingValue = "servlet", matchIfMissing = true)
    public ServletRegistrationBean<ConsoleServlet> layoverConsoleServlet(Layover layover, LayoverProperties properties) {
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
        ConsoleOptions options = ConsoleOptions.defaults().withReadOnly(p.isReadOnly()).withExternalAuthentication(true);
        ServletRegistrationBean<ConsoleServlet> registration =
                new ServletRegistrationBean<>(ConsoleServlet.create(layover, options), path + "/*");
        registration.setName("layoverConsole");
        registration.setLoadOnStartup(1);
        return registration;
    }
}
