package dev.layover.spring.boot.console;

import dev.layover.console.ReplayConsole;
import dev.layover.core.Layover;
import dev.layover.spring.boot.InvalidLayoverPropertyException;
import dev.layover.spring.boot.LayoverAutoConfiguration;
import dev.layover.spring.boot.LayoverProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * The replay console on a port of its own ({@code layover.console.enabled=true} and
 * {@code layover.console.mode=standalone}), with layover-replay-console on the classpath: the
 * console's own HTTP server on {@code layover.console.bind}:{@code layover.console.port}
 * (default 127.0.0.1:7070), its own access token ({@code layover.console.token}, else a random
 * one), over the application's {@link Layover} instance (edited args are validated against its
 * job types). Started with the context, closed with it.
 *
 * <p>The console mounted inside the application ({@code mode=servlet}, the default), behind the
 * application's own security, is {@code LayoverConsoleServletAutoConfiguration}.
 */
@AutoConfiguration(after = LayoverAutoConfiguration.class)
@ConditionalOnClass(ReplayConsole.class)
@ConditionalOnBean(Layover.class)
@ConditionalOnProperty(prefix = "layover.console", name = "enabled", havingValue = "true")
public class LayoverConsoleAutoConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(LayoverConsoleAutoConfiguration.class);

    /**
     * @param layover the application's instance
     * @param properties {@code layover.console.*}
     * @return the running console
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "layover.console", name = "mode", havingValue = "standalone")
    public ReplayConsole layoverReplayConsole(Layover layover, LayoverProperties properties) {
        LayoverProperties.Console p = properties.getConsole();
        boolean generated = p.getToken() == null || p.getToken().isBlank();
        if (generated && !isLoopback(p.getBind())) {
            throw new InvalidLayoverPropertyException("layover.console.token", new IllegalArgumentException(
                    "a console bound to " + p.getBind() + " is reachable from other machines: give it a token of at "
                            + "least 16 characters (and put it behind TLS)"));
        }
        ReplayConsole console;
        try {
            console = ReplayConsole.start(layover, ConsoleOptionsFactory.standalone(p));
        } catch (IllegalArgumentException e) {
            throw new InvalidLayoverPropertyException("layover.console", e);
        }
        if (generated) {
            // loopback only: whoever reads this log on this machine could reach the console anyway
            LOG.info("Layover replay console: {}", console.loginUrl());
        } else {
            LOG.info("Layover replay console: {} (token: layover.console.token)", console.url());
        }
        return console;
    }

    private static boolean isLoopback(String bind) {
        return bind.equals("127.0.0.1") || bind.equals("localhost") || bind.equals("::1") || bind.equals("[::1]");
    }
}
