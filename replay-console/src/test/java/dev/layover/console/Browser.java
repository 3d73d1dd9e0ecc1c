package dev.layover.console;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A real headless Chromium for the page tests: a fresh profile each time, screenshots of the
 * whole page under {@code target/screenshots/}. Skipped when Chromium or chromedriver is missing,
 * except with {@code CI=true}, where that fails.
 */
final class Browser implements AutoCloseable {

    static final Path CHROMIUM = Path.of(System.getProperty("layover.test.chromium", "/usr/bin/chromium"));
    static final Path CHROMEDRIVER = Path.of(System.getProperty("layover.test.chromedriver", "/usr/bin/chromedriver"));
    static final Duration UI_WAIT = Duration.ofSeconds(20);

    final ChromeDriver driver;
    private final Path userDataDir;
    private final int width;
    private final int height;

    /** Skips (or fails on CI) when the browser is missing. */
    static void requireChromium() {
        List<String> missing = Stream.of(CHROMIUM, CHROMEDRIVER).filter(p -> !Files.isExecutable(p))
                .map(Path::toString).toList();
        if (missing.isEmpty()) {
            return;
        }
        String message = "the browser test needs Chromium and chromedriver (apt-get install chromium chromium-driver); "
                + "missing: " + String.join(", ", missing);
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            fail(message + " (CI=true: not skipped)");
        }
        Assumptions.abort("skipped: " + message);
    }

    Browser(int width, int height) throws IOException {
        this.width = width;
        this.height = height;
        userDataDir = Files.createTempDirectory("layover-chromium-");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                "--user-data-dir=" + userDataDir, "--window-size=" + width + "," + height);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort()
                .build();
        driver = new ChromeDriver(service, options);
        // a headless window is never narrower than 500 px: emulate the width asked for
        driver.executeCdpCommand("Emulation.setDeviceMetricsOverride", java.util.Map.of("width", width, "height", height,
                "deviceScaleFactor", 1, "mobile", false));
    }

    WebDriverWait waiting() {
        return new WebDriverWait(driver, UI_WAIT);
    }

    WebElement visible(String css) {
        return waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector(css)));
    }

    void waitForText(String css, String text) {
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.cssSelector(css), text));
    }

    Object js(String script, Object... args) {
        return ((JavascriptExecutor) driver).executeScript(script, args);
    }

    /** A screenshot of the whole page (the window grows to its height for the shot). */
    void screenshot(String name) throws IOException {
        Path dir = Path.of(System.getProperty("basedir", ".")).resolve("target/screenshots");
        Files.createDirectories(dir);
        long height = (Long) js("return Math.ceil(document.documentElement.scrollHeight)");
        driver.executeCdpCommand("Emulation.setDeviceMetricsOverride", java.util.Map.of("width", width, "height",
                (int) Math.max(this.height, height + 40), "deviceScaleFactor", 1, "mobile", false));
        try {
            File png = driver.getScreenshotAs(OutputType.FILE);
            Files.copy(png.toPath(), dir.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        } finally {
            driver.executeCdpCommand("Emulation.setDeviceMetricsOverride", java.util.Map.of("width", width, "height",
                    this.height, "deviceScaleFactor", 1, "mobile", false));
        }
    }

    @Override
    public void close() throws IOException {
        driver.quit();
        try (Stream<Path> files = Files.walk(userDataDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
