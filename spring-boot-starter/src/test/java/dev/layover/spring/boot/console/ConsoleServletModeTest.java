package dev.layover.spring.boot.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/** The console mounted in a Boot web application, behind the application's Spring Security. */
@ExtendWith(LayoverPostgresExtension.class)
class ConsoleServletModeTest {

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

    @Test
    void theApplicationsSecurityDecidesAndTheConsoleNeedsNoTokenOfItsOwn(TestDatabase db) throws Exception {
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(SecuredApp.class)
                .properties("server.port=0", "spring.datasource.url=" + db.jdbcUrl(),
                        "spring.datasource.hikari.maximum-pool-size=12", "layover.threads=2",
                        "layover.console.enabled=true")
                .run()) {
            int port = ((WebServerApplicationContext) context).getWebServer().getPort();
            URI overview = URI.create("http://127.0.0.1:" + port + "/layover/api/overview");
            HttpClient http = HttpClient.newHttpClient();

            HttpResponse<String> anonymous = http.send(HttpRequest.newBuilder(overview).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(401, anonymous.statusCode(), "Spring Security refuses before the console is reached");

            String basic = "Basic " + Base64.getEncoder().encodeToString("alice:secret".getBytes(StandardCharsets.UTF_8));
            HttpResponse<String> signedIn = http.send(HttpRequest.newBuilder(overview).header("Authorization", basic).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, signedIn.statusCode(), signedIn.body());
            assertTrue(signedIn.body().startsWith("{"), signedIn.body());
        }
    }
}
