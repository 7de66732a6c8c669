// A first program: call the demo tools in parallel, stream partial output, finish.
text("Looking up the weather for three cities...");
const cities = ["Paris", "Lagos", "Lima"];
const reports = await Promise.all(cities.map((city) => tools.weather({ city })));
for (const report of reports) {
  text(`${report.city}: ${report.temperature_c} °C, ${report.sky}`);
}
yield_control(); // hand what we have to the caller now; keep running

await tools.sleep({ ms: 300 });
const total = await tools.add({ a: reports.length, b: 39 });
text(`The answer is ${total}.`);
