import { useState } from "react";
import { TODAY } from "../config.js";
import { services } from "../data/services.js";
import { formatLongDate } from "../lib/dates.js";

export default function BookPage() {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [service, setService] = useState("");
  const [date, setDate] = useState("");
  const [notes, setNotes] = useState("");
  const [sent, setSent] = useState(false);

  function handleSubmit(event) {
    event.preventDefault();
    setSent(true);
  }

  return (
    <section className="booking">
      <h1>Book an appointment</h1>
      <p className="lede">
        Choose a treatment and the day that suits you, and we'll confirm a time by email. Online bookings are
        taken from {formatLongDate(TODAY)}.
      </p>
      {sent ? (
        <p className="notice">Thanks{name ? `, ${name}` : ""}! We'll email you shortly to confirm your appointment.</p>
      ) : (
        <form className="booking-form" onSubmit={handleSubmit}>
          <div className="field">
            <label htmlFor="name">Full name</label>
            <input id="name" name="name" autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="email">Email</label>
            <input
              id="email"
              name="email"
              type="email"
              autoComplete="email"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="service">Treatment</label>
            <select id="service" name="service" value={service} onChange={(e) => setService(e.target.value)}>
              <option value="">Choose a treatment</option>
              {services.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="date">Preferred date</label>
            <input id="date" name="date" type="date" value={date} onChange={(e) => setDate(e.target.value)} />
          </div>
          <div className="field field-wide">
            <label htmlFor="notes">Anything we should know? (optional)</label>
            <textarea id="notes" name="notes" rows={3} value={notes} onChange={(e) => setNotes(e.target.value)} />
          </div>
          <div className="form-actions">
            <button type="submit" className="btn btn-primary">
              Request booking
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
