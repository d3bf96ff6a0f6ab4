import { CLINIC, OPENING_HOURS, TODAY } from "../config.js";
import { weekdayName } from "../lib/dates.js";

export default function SiteFooter() {
  const today = weekdayName(TODAY);
  return (
    <footer className="site-footer">
      <div className="site-footer-inner">
        <div>
          <h2>{CLINIC.name}</h2>
          <address>
            {CLINIC.address.map((line) => (
              <span key={line}>{line}</span>
            ))}
          </address>
          <p>
            <a href={`tel:${CLINIC.phone.replace(/\s/g, "")}`}>{CLINIC.phone}</a>
            <br />
            <a href={`mailto:${CLINIC.email}`}>{CLINIC.email}</a>
          </p>
        </div>
        <div>
          <h2>Opening hours</h2>
          <table className="hours">
            <tbody>
              {OPENING_HOURS.map(({ day, hours }) => (
                <tr key={day} className={day === today ? "today" : undefined}>
                  <th scope="row">{day}</th>
                  <td>{hours}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
      <p className="legal">HCPC-registered physiotherapists · Recognised by major health insurers</p>
    </footer>
  );
}
