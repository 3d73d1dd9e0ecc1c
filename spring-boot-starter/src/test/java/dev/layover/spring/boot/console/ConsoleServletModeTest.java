package dev.layover.spring.boot.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.spring.boot.InvalidLayoverPropertyException;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.Isolated;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.io.DefaultResourceLoader;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The console mounted in a real Boot web application on a real port: secure by default. Requests
 * come from another machine's point of view: the server listens on every interface and the
 * client connects to a non-loopback address of this machine.
 */
// alone in the fast profile: OutputCaptureExtension captures the JVM's System.out and System.err
@Isolated
@DatabaseTest
@ExtendWith(OutputCaptureExtension.class)
class ConsoleServletModeTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String KEY = "openai:boot-console";

    /** Spring Security with a login: every request authenticated, alice may sign in. */
    @SpringBootApplication
    static class SecuredApp {
        @Bean
        SecurityFilterChain security(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(a -> a.anyRequest().authenticated())
                    .httpBasic(Customizer.withDefaults())
                    .csrf(c -> c.ignoringRequestMatchers("/layover/**")) // the console has its own CSRF check
                    .build();
        }

        @Bean
        InMemoryUserDetailsManager users() {
            return new InMemoryUserDetailsManager(User.withUsername("alice").password("{noop}secret").roles("OPS").build());
        }
    }

    /** Spring Security on the classpath and nothing configured: Boot's default filter chain. */
    @SpringBootApplication
    static class DefaultSecurityApp {}

    /** A filter chain that lets /layover/** through without a login (a mistake the console survives). */
    @SpringBootApplication
    static class PermissiveApp {
        @Bean
        SecurityFilterChain security(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(a -> a.requestMatchers("/layover/**").permitAll()
                            .anyRequest().authenticated())
                    .csrf(c -> c.ignoringRequestMatchers("/layover/**"))
                    .build();
        }
    }

    /** An application without Spring Security (hidden from its class loader). */
    @SpringBootApplication
    static class PlainApp {}

    private static SpringApplicationBuilder app(Class<?> type, TestDatabase db, String... properties) {
        List<String> all = new ArrayList<>(List.of("server.port=0", "server.address=0.0.0.0",
                "spring.datasource.url=" + db.jdbcUrl(), "spring.datasource.hikari.maximum-pool-size=12",
                "layover.threads=2", "layover.console.enabled=true", "spring.flyway.enabled=false"));
        all.addAll(List.of(properties));
        return new SpringApplicationBuilder(type).properties(all.toArray(String[]::new));
    }

    private static SpringApplicationBuilder withoutSpringSecurity(SpringApplicationBuilder b) {
        return b.resourceLoader(new DefaultResourceLoader(new FilteredClassLoader("org.springframework.security.")));
    }

    /** The console's address as another machine reaches it: a non-loopback address of this one. */
    private static String base(ConfigurableApplicationContext context) {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        return "http://" + nonLoopbackAddress().getHostAddress() + ":" + port + "/layover/";
    }

    private static InetAddress nonLoopbackAddress() {
        Optional<InetAddress> found;
        try {
            found = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
                    .filter(ConsoleServletModeTest::up)
                    .flatMap(i -> Collections.list(i.getInetAddresses()).stream())
                    .filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress() && !a.isLinkLocalAddress())
                    .findFirst();
        } catch (SocketException e) {
            throw new IllegalStateException("cannot list this machine's network interfaces", e);
        }
        if (found.isEmpty()) {
            String message = "this machine has no non-loopback IPv4 address to reach the console from 'outside'";
            if ("true".equals(System.getenv("CI"))) {
                fail(message + " (CI=true: this test must run)");
            }
            Assumptions.abort(message);
        }
        return found.get();
    }

    private static boolean up(NetworkInterface i) {
        try {
            return i.isUp() && !i.isLoopback();
        } catch (SocketException e) {
            return false;
        }
    }

    private static HttpResponse<String> get(String url, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> forceOpen(String base, String authorization, String csrf) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "api/breakers/" + KEY + "/force-open"))
                .header("Content-Type", "application/json").header("X-Layover-Token", csrf)
                .header("Origin", base.substring(0, base.indexOf("/layover/")))
                .POST(HttpRequest.BodyPublishers.ofString("{\"reason\":\"maintenance\"}"));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void byDefaultAnAnonymousRequestFromAnotherMachineIsRefused(TestDatabase db, CapturedOutput output)
            throws Exception {
        try (ConfigurableApplicationContext context = app(DefaultSecurityApp.class, db).run()) {
            String base = base(context);
            for (String path : List.of("", "api/session", "api/overview", "api/dead-letters")) {
                HttpResponse<String> r = get(base + path, null);
                assertTrue(r.statusCode() == 401 || r.statusCode() == 403, path + ": " + r.statusCode() + " " + r.body());
                assertFalse(r.body().contains("csrfToken"), r.body());
            }
            HttpResponse<String> post = forceOpen(base, null, "guess");
            assertTrue(post.statusCode() == 401 || post.statusCode() == 403, post.statusCode() + " " + post.body());
            assertEquals(0, db.count("select count(*) from layover.breakers where provider_key = ?", KEY));
        }
        assertTrue(output.getAll().contains("Layover console mounted at /layover on the application's port, behind "
                + "Spring Security"), "an INFO line says where it is and who gets in");
    }

    @Test
    void aFilterChainThatLetsTheConsoleThroughStillGetsNoAnonymousAccess(TestDatabase db) throws Exception {
        try (ConfigurableApplicationContext context = app(PermissiveApp.class, db).run()) {
            String base = base(context);
            for (String path : List.of("", "api/session", "api/overview")) {
                HttpResponse<String> r = get(base + path, null);
                assertEquals(401, r.statusCode(), path + ": " + r.body());
                assertTrue(r.body().contains("signed-in user"), "the console itself refuses: " + r.body());
            }
            HttpResponse<String> post = forceOpen(base, null, "guess");
            assertEquals(401, post.statusCode(), post.body());
            assertEquals(0, db.count("select count(*) from layover.breakers where provider_key = ?", KEY));
        }
    }

    @Test
    void withoutSpringSecurityTheApplicationFailsToStartAndSaysWhatToSet(TestDatabase db, CapturedOutput output) {
        Exception e = assertThrows(Exception.class, () -> withoutSpringSecurity(app(PlainApp.class, db)).run().close());
        InvalidLayoverPropertyException refused = cause(e, InvalidLayoverPropertyException.class);
        assertNotNull(refused, "refused by the starter: " + e);
        assertEquals("layover.console.allow-anonymous", refused.property());
        assertTrue(refused.getMessage().contains("/layover") && refused.getMessage().contains("no authentication"),
                refused.getMessage());
        String report = output.getAll();
        assertTrue(report.contains("APPLICATION FAILED TO START"), report);
        assertTrue(report.contains("Layover refused the property layover.console.allow-anonymous"), report);
        assertTrue(report.contains("spring-boot-starter-security") && report.contains("layover.console.mode=standalone"),
                "the action names the ways out: " + report);

        Exception noChain = assertThrows(Exception.class, () -> app(PlainApp.class, db,
                "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.security.servlet.SecurityAutoConfiguration,"
                        + "org.springframework.boot.autoconfigure.security.servlet.SecurityFilterAutoConfiguration,"
                        + "org.springframework.boot.actuate.autoconfigure.security.servlet.ManagementWebSecurityAutoConfiguration")
                .run().close());
        assertNotNull(cause(noChain, InvalidLayoverPropertyException.class),
                "Spring Security on the classpath without a filter chain protects nothing: " + noChain);
    }

    @Test
    void allowAnonymousLetsEveryoneReadAndNobodyAct(TestDatabase db, CapturedOutput output) throws Exception {
        try (ConfigurableApplicationContext context = withoutSpringSecurity(app(PlainApp.class, db,
                "layover.console.allow-anonymous=true")).run()) {
            String base = base(context);
            assertEquals(200, get(base, null).statusCode());
            HttpResponse<String> overview = get(base + "api/overview", null);
            assertEquals(200, overview.statusCode(), overview.body());
            JsonNode session = json(get(base + "api/session", null));
            assertTrue(session.get("readOnly").asBoolean(), session.toString());
            HttpResponse<String> post = forceOpen(base, null, session.get("csrfToken").asText());
            assertEquals(403, post.statusCode(), post.body());
            assertTrue(post.body().contains("read-only"), post.body());
            assertEquals(0, db.count("select count(*) from layover.breakers where provider_key = ?", KEY));
        }
        assertTrue(output.getAll().contains("Layover console mounted at /layover on the application's port WITHOUT "
                + "authentication: anyone who reaches this port can read it (read-only)"), output.getAll());
    }

    @Test
    void allowAnonymousWithReadOnlyFalseLetsAnonymousRequestsAct(TestDatabase db, CapturedOutput output)
            throws Exception {
        try (ConfigurableApplicationContext context = withoutSpringSecurity(app(PlainApp.class, db,
                "layover.console.allow-anonymous=true", "layover.console.read-only=false")).run()) {
            String base = base(context);
            JsonNode session = json(get(base + "api/session", null));
            assertFalse(session.get("readOnly").asBoolean(), session.toString());
            HttpResponse<String> post = forceOpen(base, null, session.get("csrfToken").asText());
            assertEquals(200, post.statusCode(), post.body());
            assertEquals("console", db.value("select actor from layover.audit_log where action = 'force_open'"));
        }
        assertTrue(output.getAll().contains("WITHOUT authentication: anyone who reaches this port can read it and act"),
                output.getAll());
    }

    @Test
    void behindSpringSecurityTheLoginDecidesAndTheAuditLogNamesTheUser(TestDatabase db) throws Exception {
        try (ConfigurableApplicationContext context = app(SecuredApp.class, db).run()) {
            String base = base(context);
            assertEquals(401, get(base + "api/overview", null).statusCode(), "Spring Security refuses first");
            assertEquals(401, get(base + "api/overview", basic("alice", "wrong")).statusCode());

            String alice = basic("alice", "secret");
            HttpResponse<String> overview = get(base + "api/overview", alice);
            assertEquals(200, overview.statusCode(), overview.body());
            JsonNode session = json(get(base + "api/session", alice));
            assertEquals("alice", session.get("user").asText(), session.toString());
            assertFalse(session.get("readOnly").asBoolean(), session.toString());

            assertEquals(403, forceOpen(base, alice, "not-the-token").statusCode(), "the console's CSRF check holds");
            HttpResponse<String> post = forceOpen(base, alice, session.get("csrfToken").asText());
            assertEquals(200, post.statusCode(), post.body());
            assertEquals("open", db.value("select state from layover.breakers where provider_key = ?", KEY));
            assertEquals("alice", db.value("select actor from layover.audit_log where action = 'force_open'"));
        }
    }

    private static <T extends Throwable> T cause(Throwable t, Class<T> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }
}
