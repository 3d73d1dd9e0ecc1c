package dev.layover.samples.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.eclipse.jetty.util.Jetty;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console on a port of its own ({@code layover.console.mode=standalone}) in a Boot 3.5
 * application whose build leaves Jetty to Boot's dependency management (12.0.x, while the console
 * is built on 12.1): it starts, answers its token holder, refuses everyone else, and closes a
 * connection that sends half a request.
 */
@DatabaseTest
class StandaloneConsoleOnBootsJettyTest {

    private static final TestDatabase DB = LayoverPostgresExtension.emptyDatabase();
    private static final String TOKEN = "a-console-token-of-this-test";

    @AfterAll
    static void dropDatabase() {
        DB.close();
    }

    @Test
    void theConsoleRunsOnTheJettyBootManages() throws Exception {
        System.out.println("Jetty on the test's classpath: " + Jetty.VERSION);
        assertTrue(Jetty.VERSION.startsWith("12.0."), "the Jetty Boot 3.5 manages, not the console's own: " + Jetty.VERSION);
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ReceiptsApplication.class)
                .run("--spring.datasource.url=" + DB.jdbcUrl(), "--layover.console.enabled=true", // over application.properties
                        "--layover.console.mode=standalone", "--layover.console.port=0",
                        "--layover.console.token=" + TOKEN)) {
            ReplayConsole console = context.getBean(ReplayConsole.class);
            assertEquals(1, DB.count("select count(*) from layover.scheduled_tasks where task_name = "
                    + "'layover-recovery-sweep'"), "the application runs on the test's database");
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> overview = http.send(HttpRequest.newBuilder(URI.create(console.url() + "api/overview"))
                    .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, overview.statusCode(), overview.body());
            assertTrue(overview.body().contains("\"jobs\""), overview.body());
            HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(console.url() + "?token=" + TOKEN))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(303, page.statusCode(), "the login sets the session cookie: " + page.body());
            HttpResponse<String> anonymous = http.send(HttpRequest.newBuilder(URI.create(console.url() + "api/overview"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(401, anonymous.statusCode());

            // the slow-request guard, which uses Jetty's connection internals, works on this Jetty too
            try (ReplayConsole guarded = ReplayConsole.start(context.getBean(Layover.class),
                    ConsoleOptions.defaults().withHeaderTimeout(Duration.ofMillis(500)));
                    Socket slow = new Socket(guarded.url().getHost(), guarded.url().getPort())) {
                slow.setSoTimeout(10_000);
                slow.getOutputStream().write("GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                        .getBytes(StandardCharsets.US_ASCII));
                String answer = new String(slow.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
                assertTrue(answer.startsWith("HTTP/1.1 408"), "half a request is answered 408 and closed: " + answer);
            }
        }
    }
}
