import { Link } from "react-router-dom";

const HIGHLIGHTS = [
  { title: "Seen within 48 hours", text: "Most new patients are assessed within two working days of getting in touch." },
  { title: "One physio, start to finish", text: "You'll see the same physiotherapist for your whole course of treatment." },
  { title: "Exercises that fit your week", text: "Every plan comes with short videos you can follow at home or in the gym." },
];

export default function HomePage() {
  return (
    <>
      <section className="hero">
        <h1>Physiotherapy that gets you back to what you love</h1>
        <p>
          Back pain, a running injury, or rehab after surgery: our chartered physiotherapists in Otley will find the
          cause, treat it, and show you how to keep it from coming back.
        </p>
        <div className="hero-actions">
          <Link className="btn btn-primary" to="/book">
            Book an appointment
          </Link>
          <Link className="btn btn-secondary" to="/services">
            See services &amp; prices
          </Link>
        </div>
      </section>
      <section className="highlights" aria-label="Why Kestrel">
        {HIGHLIGHTS.map((h) => (
          <div className="highlight" key={h.title}>
            <h2>{h.title}</h2>
            <p>{h.text}</p>
          </div>
        ))}
      </section>
    </>
  );
}
