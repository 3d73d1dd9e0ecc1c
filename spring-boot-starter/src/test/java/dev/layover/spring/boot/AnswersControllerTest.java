package dev.layover.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.CallFailedException;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.NotAdmittedException;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.io.DefaultResourceLoader;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC controller answering a person through the {@link InteractiveCalls} bean, with the
 * real openai-java SDK (no retries of its own) against the fake provider: the answer, and a 503
 * with Retry-After when the key is cooling (the provider not called).
 */
@DatabaseTest
class AnswersControllerTest {

    static final String KEY = "openai:answers";
    static FakeProvider fake;

    /** The controller an application writes: one call, at most 200 ms of waiting for the key. */
    @RestController
    static class AnswersController {
        private final InteractiveCalls calls;
        private final OpenAIClient client;

        AnswersController(InteractiveCalls calls, OpenAIClient client) {
            this.calls = calls;
            this.client = client;
        }

        @GetMapping("/answer")
        String answer(@RequestParam String q) {
            return calls.call(KEY, 300, Duration.ofMillis(200), () -> client.chat().completions()
                    .create(ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage(q).build())
                    .choices().get(0).message().content().orElse(""));
        }

        @ExceptionHandler(NotAdmittedException.class)
        ResponseEntity<String> notAdmitted(NotAdmittedException e) {
            long seconds = e.until() == null ? 1 : Math.max(1, Duration.between(java.time.Instant.now(), e.until()).toSeconds());
            return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).header("Retry-After", String.valueOf(seconds))
                    .body("busy: " + e.reason());
        }

        @ExceptionHandler(CallFailedException.class)
        ResponseEntity<String> failed(CallFailedException e) {
            return ResponseEntity.status(HttpStatus.BAD_GATEWAY).body("failed: " + e.kind().tag());
        }
    }

    @SpringBootApplication
    static class AnswersApp {
        @Bean
        OpenAIClient openAi() {
            return OpenAIOkHttpClient.builder().apiKey("sk-test").baseUrl(fake.primary().base() + "/v1")
                    .maxRetries(0).timeout(Duration.ofSeconds(5)).build();
        }

        @Bean
        AnswersController answers(InteractiveCalls calls, OpenAIClient client) {
            return new AnswersController(calls, client);
        }
    }

    @Test
    void theControllerAnswersThroughTheBeanAndSaysBusyWhileTheKeyCools(TestDatabase db) throws Exception {
        fake = FakeProvider.start();
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(AnswersApp.class)
                .resourceLoader(new DefaultResourceLoader(new FilteredClassLoader("org.springframework.security.")))
                .properties("server.port=0", "server.address=127.0.0.1", "spring.datasource.url=" + db.jdbcUrl(),
                        "spring.datasource.hikari.maximum-pool-size=12", "layover.threads=2",
                        "layover.interactive.share=0.3", "layover.interactive.window=800ms", "spring.flyway.enabled=false")
                .run()) {
            int port = ((WebServerApplicationContext) context).getWebServer().getPort();
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> ok = get(http, port, "hello there");
            assertEquals(200, ok.statusCode(), ok.body());
            assertTrue(ok.body().contains("hello there"), "the fake echoes the question: " + ok.body());

            fake.primary().throttledRetryAfter(Duration.ofSeconds(30)).phase(FakeProvider.Phase.THROTTLED);
            HttpResponse<String> limited = get(http, port, "again");
            assertEquals(502, limited.statusCode(), limited.body());
            assertEquals("failed: rate_limited", limited.body());

            HttpResponse<String> busy = get(http, port, "and again");
            assertEquals(503, busy.statusCode(), busy.body());
            assertEquals("busy: COOLING", busy.body());
            long retryAfter = Long.parseLong(busy.headers().firstValue("Retry-After").orElseThrow());
            assertTrue(retryAfter > 10 && retryAfter <= 31, "the key's cooldown: " + retryAfter);
            assertEquals(2, fake.primary().calls(), "the third question did not reach the provider");
            assertEquals(1L, db.count("select count(*) from layover.cooldowns where provider_key = ?", KEY),
                    "the web request's 429 cooled the key for the fleet's jobs too");
        } finally {
            fake.close();
        }
    }

    /** {@code layover.interactive.*}: Layover's refusal of a share out of range names the property. */
    @Test
    void anInteractiveShareOutOfRangeIsRefusedNamingItsProperty() {
        LayoverProperties p = new LayoverProperties();
        p.getInteractive().setShare(1.5);
        InvalidLayoverPropertyException e = org.junit.jupiter.api.Assertions.assertThrows(
                InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(p, dev.layover.core.Layover.builder(new org.postgresql.ds.PGSimpleDataSource())));
        assertEquals("layover.interactive.share", e.property());
        assertTrue(e.getMessage().contains("interactive share must be in [0, 1)"), e.getMessage());
        p.getInteractive().setShare(0.5);
        p.getInteractive().setWindow(Duration.ofMillis(500));
        PropertiesApplier.apply(p, dev.layover.core.Layover.builder(new org.postgresql.ds.PGSimpleDataSource()));
    }

    private static HttpResponse<String> get(HttpClient http, int port, String q) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/answer?q="
                + URLEncoder.encode(q, StandardCharsets.UTF_8))).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
