// Plain Java library (no Android imports): tokenizer, model-pack reader, scores, latency statistics.
// Java 8 language level so the app can use it on every supported Android release.
plugins {
    `java-library`
}

tasks.withType<JavaCompile>().configureEach {
    // --release 8 checks the API too, not just the bytecode level (same flag as ci-check.sh).
    options.release.set(8)
    options.encoding = "UTF-8"
}

dependencies {
    // org.json is part of the Android platform; on the JVM, this artifact is the same implementation.
    compileOnly("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation(platform("org.junit:junit-bom:5.10.3"))
    testImplementation("org.junit.jupiter:junit-jupiter")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher")
}

tasks.test {
    useJUnitPlatform()
}
