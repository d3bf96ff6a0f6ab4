export default function AboutPage() {
  return (
    <section className="about">
      <h1>About Larkspur</h1>
      <p>
        Larkspur started in 2017 with a 5 kg drum roaster in a railway arch. We now roast about 300 kg a week, still
        one small batch at a time, still on Tuesdays.
      </p>
      <h2>How we buy</h2>
      <p>
        We buy from the same handful of farms and cooperatives every year and pay well above the Fairtrade minimum. Each
        bag tells you who grew it and how it was processed.
      </p>
      <h2>Wholesale</h2>
      <p>Run a café or an office kitchen? Email wholesale@larkspur.example and we will send you samples.</p>
    </section>
  );
}
